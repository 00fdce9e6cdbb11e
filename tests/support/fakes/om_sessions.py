"""The stand-in's sign-in and settings: the JWT filter (2, 3, 4; ref §4), /users/login, the
SSO provider's /oauth/token, and /system/settings (24; ref §2.9: admin-only but for
lineageSettings).

Functions of the FakeOpenMetadata they answer for (`fake`); om_auth.py holds the principals,
roles and 403s.
"""

from __future__ import annotations

import base64
import binascii
import copy
import dataclasses
import uuid
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs

from tests.support.fakes.om_auth import OMError, Principal, authorize_admin, bot_principal
from tests.support.fakes.om_http import Call, json_patch

if TYPE_CHECKING:
    from tests.support.fakes.openmetadata import Answer, FakeOpenMetadata


def authenticate(fake: FakeOpenMetadata, call: Call) -> Principal:
    header = call.environ.get("HTTP_AUTHORIZATION", "")
    if not header.startswith("Bearer "):
        raise OMError(401, "Not Authorized! Token not present", rule="unauthenticated")
    principal = fake.principals.get(header[len("Bearer ") :])
    if principal is None:
        raise OMError(401, "Not Authorized! Unable to decode the token.", rule="unauthenticated")
    if principal.expired:
        raise OMError(401, "Expired token!", rule="unauthenticated")
    return principal


def login(fake: FakeOpenMetadata, call: Call) -> dict[str, Any]:
    body = call.json()
    fake.check_body("auth/loginRequest.json", body)
    if not isinstance(body, dict):
        raise OMError(400, "Invalid request format", rule="format", detail="not an object")
    email, password = str(body.get("email")), body.get("password", "")
    try:
        plain = base64.b64decode(password, validate=True).decode()
    except (binascii.Error, UnicodeDecodeError) as e:
        raise OMError(400, "Password needs to be encoded in Base-64.", rule="password") from e
    if fake.passwords.get(email) != plain:
        raise OMError(
            401, "You have entered an invalid username or password.", rule="unauthenticated"
        )
    user = fake.users.get(email) or Principal(
        email.split("@", maxsplit=1)[0], roles=frozenset({"DataConsumer"}), bot=False
    )
    if email in fake.admins and not user.admin:
        user = dataclasses.replace(user, admin=True)
    token = f"session-{uuid.uuid4()}"
    fake.principals[token] = user
    return {
        "tokenType": "Bearer",
        "accessToken": token,
        "refreshToken": f"refresh-{uuid.uuid4()}",
        "expiryDuration": 3600,
    }


def oauth(fake: FakeOpenMetadata, call: Call) -> dict[str, Any]:
    form = {k: v[0] for k, v in parse_qs(call.raw.decode()).items()}
    if fake.oauth_clients.get(form.get("client_id", "")) != form.get("client_secret"):
        raise OMError(401, "invalid_client", rule="unauthenticated")
    token = f"oauth-{uuid.uuid4()}"
    fake.principals[token] = bot_principal(form["client_id"])
    return {"access_token": token, "token_type": "Bearer", "expires_in": 3600}


def settings(fake: FakeOpenMetadata, call: Call, principal: Principal, name: str) -> Answer:
    method = call.request.method
    if name and method == "GET":
        if name != "lineageSettings":  # getSettingByName: authorizeAdmin for all but this
            authorize_admin(principal)
        return 200, {"config_type": name, "config_value": setting(fake, name)}, []
    if not name and method == "PUT":
        body = call.json()
        if not isinstance(body, dict) or not isinstance(body.get("config_value"), dict):
            raise OMError(400, "Invalid request format", rule="format", detail="settings")
        authorize_admin(principal)
        store_setting(fake, str(body.get("config_type")), body["config_value"])
        return 200, body, []
    if name and method == "PATCH":
        ops = call.json()
        if not isinstance(ops, list):
            raise OMError(400, "Invalid request format", rule="format", detail="JSON Patch")
        authorize_admin(principal)
        value = json_patch(copy.deepcopy(setting(fake, name)), ops)
        store_setting(fake, name, value)
        return 200, {"config_type": name, "config_value": setting(fake, name)}, []
    raise OMError(404, "HTTP 404 Not Found", rule="not-found")


def setting(fake: FakeOpenMetadata, name: str) -> dict[str, Any]:
    if name == "openLineageSettings":
        return fake.settings
    if name not in fake.other_settings:
        raise OMError(404, f"Setting {name} not found", rule="not-found")  # text: ours
    return fake.other_settings[name]


def store_setting(fake: FakeOpenMetadata, name: str, value: dict[str, Any]) -> None:
    if name == "openLineageSettings":
        fake.check_body("configuration/openLineageSettings.json", value)
        fake.settings.clear()  # in place: tests hold a reference to `settings`
        fake.settings.update(copy.deepcopy(value))
    else:
        fake.other_settings[name] = copy.deepcopy(value)

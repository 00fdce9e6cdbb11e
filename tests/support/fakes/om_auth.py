"""Principals, roles and OM's authorization answers, for the OM stand-in (ref §4.3, §4.4, §9.8).

OM evaluates policies per operation and resource type: deny rules win, then any allow rule that
names the operation (or `EditAll`/`ViewAll`, which match every `Edit*`/`View*` operation) grants
it. Admins skip policy evaluation. The texts of the 403 answers are OM's own.
"""

from __future__ import annotations

from dataclasses import dataclass, field

ALL = "all"  # a rule on every resource type
#: What `FakeOpenMetadata.with_bot()` hands out: the ingestion bot with the lineage bot's role.
BOT_ROLES = frozenset({"IngestionBotRole", "LineageBotRole"})


class OMError(Exception):
    """An answer other than 2xx. `body` replaces OM's usual `{"code", "message", **extra}` error
    body; `rule` names the check that fired and `detail` says where (both are kept on the recorded
    request as `violation` and `violation_detail`, never sent)."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        rule: str,
        body: dict[str, object] | None = None,
        detail: str | None = None,
        **extra: object,
    ) -> None:
        super().__init__(message)
        self.status, self.message, self.rule, self.detail = status, message, rule, detail
        self.body = body if body is not None else {"code": status, "message": message, **extra}


@dataclass(frozen=True)
class Rule:
    name: str
    operations: frozenset[str]
    resources: frozenset[str] = frozenset({ALL})

    def matches(self, operation: str, resource: str) -> bool:
        if ALL not in self.resources and resource not in self.resources:
            return False
        # CompiledRule.matchOperation: EditAll matches every Edit*, ViewAll every View*
        return (
            operation in self.operations
            or ("EditAll" in self.operations and operation.startswith("Edit"))
            or ("ViewAll" in self.operations and operation.startswith("View"))
        )


@dataclass(frozen=True)
class Role:
    policy: str
    allow: tuple[Rule, ...]
    deny: tuple[Rule, ...] = ()


def _ops(*names: str) -> frozenset[str]:
    return frozenset(names)


#: The seeded roles OM ships (ref §4.3, §9.8). DefaultBotPolicy's denies on bots and webhooks are
#: not modelled: the stand-in serves neither resource.
ROLES: dict[str, Role] = {
    "IngestionBotRole": Role(
        "IngestionBotPolicy",
        allow=(
            Rule(
                "IngestionBotRule-Allow",
                _ops("Create", "BulkCreate", "BulkUpdate", "EditAll", "ViewAll", "Delete"),
            ),
        ),
        deny=(Rule("DisplayName-Deny", _ops("EditDisplayName")),),
    ),
    "LineageBotRole": Role(
        "LineageBotPolicy",
        allow=(
            Rule("LineageBotRule-Allow", _ops("EditAll", "ViewAll")),
            Rule("LineageBotRule-AllowQuery", _ops("Create", "EditAll", "ViewAll"), _ops("query")),
        ),
    ),
    "DataSteward": Role(
        "DataStewardPolicy",
        allow=(
            Rule(
                "DataStewardPolicy-EditRule",
                _ops(
                    "ViewAll",
                    "EditDescription",
                    "EditDisplayName",
                    "EditLineage",
                    "EditOwners",
                    "EditTags",
                ),
            ),
        ),
    ),
    "DataConsumer": Role(
        "DataConsumerPolicy",
        allow=(
            Rule(
                "DataConsumerPolicy-EditRule",
                _ops(
                    "ViewAll",
                    "EditDescription",
                    "EditTags",
                    "EditGlossaryTerms",
                    "EditTier",
                    "EditCertification",
                ),
            ),
        ),
    ),
}


@dataclass
class Principal:
    """Who a token belongs to.

    `roles` are names from ROLES; by default the bot roles. `permissions` is a custom policy (an
    allow rule on every resource); a principal given only `permissions` has no other role.
    `bot` matters for descriptions: a bot's PUT never replaces a non-empty one (ref §9.4).
    """

    name: str
    roles: frozenset[str] | None = None
    admin: bool = False
    expired: bool = False
    bot: bool = True
    permissions: frozenset[str] = field(default_factory=frozenset)

    def __post_init__(self) -> None:
        if self.roles is None:
            self.roles = frozenset() if self.permissions else BOT_ROLES
        unknown = set(self.roles) - set(ROLES)
        if unknown:
            raise ValueError(f"unknown OM roles {sorted(unknown)}; known: {sorted(ROLES)}")


def bot_principal(name: str = "ingestion-bot") -> Principal:
    return Principal(name, roles=BOT_ROLES)


def admin_principal(name: str = "admin") -> Principal:
    return Principal(name, roles=frozenset(), admin=True, bot=False)


def _prefix(principal: Principal) -> str:
    return f"Principal: CatalogPrincipal{{name='{principal.name}'}}"


def authorize(principal: Principal, operations: list[str], resource: str) -> None:
    """Raise OM's 403 unless every operation is allowed on this resource type."""
    if principal.admin:
        return
    roles = sorted(principal.roles or ())
    for operation in operations:
        for role_name in roles:
            role = ROLES[role_name]
            for rule in role.deny:
                if rule.matches(operation, resource):
                    raise OMError(
                        403,
                        f"{_prefix(principal)} operation {operation} denied by role {role_name}, "
                        f"policy {role.policy}, rule {rule.name}",
                        rule="denied",
                    )
    custom = Rule("custom", principal.permissions)
    missing = [
        op
        for op in operations
        if not custom.matches(op, resource)
        and not any(rule.matches(op, resource) for r in roles for rule in ROLES[r].allow)
    ]
    if missing:
        raise OMError(
            403,
            f"{_prefix(principal)} operations [{', '.join(missing)}] not allowed",
            rule="forbidden",
        )


def authorize_admin(principal: Principal) -> None:
    if not principal.admin:
        raise OMError(403, f"{_prefix(principal)} is not admin", rule="not-admin")


#: DefaultAuthorizer.authorizeRequests: the 403 of endpoints that accept ANY of several rights.
ANY_DENIED = "User does not have ANY of the required permissions."


def authorize_any(principal: Principal, checks: list[tuple[str, str]]) -> None:
    """Raise OM's ANY-logic 403 unless one (operation, resource type) pair is allowed (ref §9.8)."""
    for operation, resource in checks:
        try:
            authorize(principal, [operation], resource)
        except OMError:
            continue
        return
    raise OMError(403, ANY_DENIED, rule="forbidden-any")

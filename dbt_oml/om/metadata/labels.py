"""Tag labels and owner references for dbt metadata, looked up in OpenMetadata once per run.

I/O adapter (through om.metadata.session). dbt tags become tags of one classification (`dbtTags` by
default), created when missing, as OM's own dbt ingestion does (ref §9.2); `meta.openmetadata`
tags, glossary terms and tiers are used only when OM has them. Owners (ref §9.5) are looked up
exactly, since a bot cannot rely on the search index: a name is a Group team, else a user (a
same-named team of another type gives no owner); an e-mail is the user, else the team, whose
name is its local part and whose e-mail matches. What OM does not know is one INFO line.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from dbt_oml.errors import ConfigError
from dbt_oml.om.metadata.session import Session
from dbt_oml.om.names import check_name, quote

logger = logging.getLogger(__name__)
Label = dict[str, str]


def label(fqn: str, *, glossary: bool = False) -> Label:
    """A tag label as OM's dbt ingestion sends it.

    >>> label("dbtTags.pii")["labelType"], label("Sales.Revenue", glossary=True)["source"]
    ('Automated', 'Glossary')
    """
    return {
        "tagFQN": fqn,
        "source": "Glossary" if glossary else "Classification",
        "labelType": "Automated",
        "state": "Suggested",
    }


class Labels:
    """Tags, glossary terms and owners of one run (cached: each is looked up once)."""

    def __init__(self, session: Session, *, classification: str) -> None:
        self.session = session
        self.classification = classification
        self._classification: bool | None = None
        self._found: dict[tuple[str, str], Label | None] = {}
        self._owners: dict[str, dict[str, Any] | None] = {}

    # -- tags --------------------------------------------------------------------------------

    def dbt_tag(self, tag: str) -> Label | None:
        """The label of a dbt tag; the classification and the tag are created when missing."""
        fqn = f"{quote(self.classification)}.{quote(tag)}"
        key = ("tags", fqn)
        if key in self._found:
            return self._found[key]
        self._found[key] = None
        try:
            check_name(tag, kind="dbt tag")
        except ConfigError as e:
            self.session.say(f"dbt tag {tag!r} is not an OpenMetadata name: {e}")
            return None
        if not self._ensure_classification():
            return None
        if self.session.read("tags", "tags", fqn) is None:
            body = {"classification": self.classification, "name": tag, "description": "dbt Tags"}
            reply = self.session.write("tags", "PUT", "tags", body, fqn)
            if reply is not None and not reply.ok:
                return None
        self._found[key] = label(fqn)
        return self._found[key]

    def _ensure_classification(self) -> bool:
        if self._classification is None:
            self._classification = True
            name = self.classification
            if self.session.read("tags", "classifications", quote(name)) is None:
                body = {"name": name, "description": "dbt classification"}
                reply = self.session.write("tags", "PUT", "classifications", body, name)
                self._classification = reply is None or reply.ok
        return self._classification

    def existing(self, fqn: str, *, glossary: bool = False) -> Label | None:
        """The label of a tag or glossary term OM has (`meta.openmetadata`); None, said once."""
        collection = "glossaryTerms" if glossary else "tags"
        key = (collection, fqn)
        if key not in self._found:
            found = self.session.read("tags", collection, fqn)
            self._found[key] = label(fqn, glossary=glossary) if found is not None else None
            if found is None:
                kind = "glossary term" if glossary else "tag"
                self.session.say(
                    f"OpenMetadata has no {kind} {fqn} (from dbt meta.openmetadata): not applied"
                )
        return self._found[key]

    def labels(
        self, tags: Iterable[str], om_tags: Iterable[str], glossary: Iterable[str]
    ) -> list[Label]:
        """Labels for dbt tags, OM tags (a tier is one) and glossary terms, once each."""
        found = [self.dbt_tag(t) for t in tags]
        found += [self.existing(t) for t in om_tags]
        found += [self.existing(t, glossary=True) for t in glossary]
        unique = {f["tagFQN"]: f for f in found if f is not None}
        return list(unique.values())

    # -- owners ------------------------------------------------------------------------------

    def owner(self, who: str) -> dict[str, Any] | None:
        """An owner reference ({id, type, name}) for a dbt owner, or None (said once)."""
        if who not in self._owners:
            self._owners[who] = self._find_owner(who)
            if self._owners[who] is None:
                self.session.say(
                    f"dbt owner {who!r} is no OpenMetadata user or Group team: no owner set from it"
                )
        return self._owners[who]

    def _find_owner(self, who: str) -> dict[str, Any] | None:
        if "@" in who:
            local = who.split("@", 1)[0]
            for collection, kind in (("users", "user"), ("teams", "team")):
                found = self.session.read("owners", collection, quote(local))
                if found is not None and str(found.get("email", "")).lower() == who.lower():
                    return _ref(found, kind) if _may_own(found, kind) else None
            return None
        team = self.session.read("owners", "teams", quote(who))
        if team is not None:  # a same-named team of another type: no owner, no user fallback
            return _ref(team, "team") if _may_own(team, "team") else None
        user = self.session.read("owners", "users", quote(who))
        return _ref(user, "user") if user is not None else None


def _may_own(entity: dict[str, Any], kind: str) -> bool:
    return kind == "user" or entity.get("teamType") == "Group"


def _ref(entity: dict[str, Any], kind: str) -> dict[str, Any]:
    return {"id": entity["id"], "type": kind, "name": entity["name"]}

"""Secrets never shown: which settings hold one, and a configuration's copy fit for logs, errors and dumps.

Passwords, JAAS configs (`sasl.jaas.config` carries the password inline), keys and tokens are replaced by
`[hidden]` wherever a configuration is shown: a `StreamsConfig`'s repr, the client's config dump, the Kafka
client settings' messages. It sits with the configuration at the bottom of streamlet, so that everything
that shows a configuration can mask it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

REDACTED = "[hidden]"

_SECRET_KEY = re.compile(r"(password|secret|jaas|credential|token|(^|\.)ssl\.keystore\.key$|(^|\.)ssl\.key$"
                         r"|(^|\.)basic\.auth\.user\.info$)",
                         re.IGNORECASE)


def is_secret_key(key: str) -> bool:
    """True for settings whose value must never be shown: passwords, JAAS configs, keys, tokens."""
    return bool(_SECRET_KEY.search(key))


def redact(config: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of `config` fit for logs, errors and dumps: secret values are replaced by `[hidden]`."""
    return {key: (REDACTED if is_secret_key(str(key)) and value is not None else value)
            for key, value in config.items()}


_URL_CREDENTIALS = re.compile(r"(?<=://)([^/@\s:]*):[^/@\s]*@")


def redact_url_credentials(text: str) -> str:
    """`text` with the password of every `scheme://user:password@host` in it replaced by `[hidden]`."""
    return _URL_CREDENTIALS.sub(lambda m: f"{m.group(1)}:{REDACTED}@", text)

"""The modules behind the commands, imported when a command first reads from them, not when `kintsugi` starts.

Importing `controlplane.frontdoor.services` brings in MLflow, scikit-learn and DataHub's SDK: about three seconds that
`kintsugi --help`, a mistyped option or an unknown command should not cost. The type checker sees the modules
themselves.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__all__ = ["contracts", "landing", "onboarding", "passport", "passports", "services", "unitguess", "views"]


class _Module:
    """Stands for a module; the first attribute read imports it (Python keeps it in sys.modules after that)."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attribute: str) -> Any:
        return getattr(importlib.import_module(self._name), attribute)


if TYPE_CHECKING:
    from controlplane.frontdoor import services, views
    from controlplane.models import passport as passports
    from controlplane.models import passport_signing as passport
    from controlplane.onboard import contracts, unitguess
    from controlplane.onboard import init as onboarding
    from controlplane.onboard import land as landing  # `land` and `onboard` name commands and CLI modules
else:
    contracts = _Module("controlplane.onboard.contracts")
    landing = _Module("controlplane.onboard.land")
    onboarding = _Module("controlplane.onboard.init")
    passport = _Module("controlplane.models.passport_signing")
    passports = _Module("controlplane.models.passport")
    services = _Module("controlplane.frontdoor.services")
    unitguess = _Module("controlplane.onboard.unitguess")
    views = _Module("controlplane.frontdoor.views")

"""The daemon's configuration, one package: the settings and how config.toml is read
(`settings`), its [[backends]] tables (`backends`), recall's and memory's keys (`recall`),
config.toml edited in place (`file`), and docs/config.md made from the descriptions (`doc`).
What the rest of the daemon uses is here."""

from ctxkeep.daemon.config.settings import LIVE, Config, ConfigError, apply_live, load, show

__all__ = ["LIVE", "Config", "ConfigError", "apply_live", "load", "show"]

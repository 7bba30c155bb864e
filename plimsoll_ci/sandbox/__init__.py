"""Sandboxes for untrusted controllers: the provider registry, start-up checks and tiers.

    from plimsoll_ci.sandbox import all_providers, stage, startup
    st = stage.stage("agent/controller.py")            # the one copy that is scanned and mounted
    box = startup.open_sandbox("gvisor", st, startup.Startup(course_info, flights=64,
                                                              min_tier="kernel"))
    box.session.send(...); box.session.recv(...)        # the protocol (see runner.py)
    box.tier, box.evidence                               # what was configured and seen

Providers are listed once, strongest first, in `all_providers.PROVIDERS` (each one a module that
follows `provider.Provider`). A provider never falls back to another: asking for `gvisor` where
runsc is missing is an error, and a sandbox whose start-up checks do not support its configured
tier is recorded one tier lower (and refused under `--min-tier`).

Tiers (`plimsoll_ci.tiers`) live below this package, beside `attest/`, which checks them in a
record. This package's `__init__` imports nothing.
"""

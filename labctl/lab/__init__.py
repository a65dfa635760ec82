"""The lab layer: the vocabulary a test plan speaks (power, readiness, metric sources, timeline).

From the bottom up: :mod:`.context` (the lab, its clock, timeline, driver settings and pooled
driver connections), the services over it (:mod:`.power`, :mod:`.ready`, :mod:`.strategy`,
:mod:`.sources`, :mod:`.health`, :mod:`.files`, :mod:`.preflight`, :mod:`.launchers`,
:mod:`.sites`), and :mod:`.session`, the façade that builds them::

    from labctl.lab.session import LabSession

    with LabSession(lab, clock) as s:
        s.power.on("first-25")                     # -> PowerReport (per machine, dispatch spread)
        s.wait_ready("first-25", timeout_s=600)    # -> {name: Readiness} (ready at t / timeout / error)

:mod:`.lease` (one owner per lab) stands beside them.
"""

"""The virtual-desktop side of the lab twin: desktops, ESXi hosts, PVS servers and SAN arrays.

Modules, one job each:

- ``arrays``     array hardware -> drive service times, RAID penalties, caches, data placement
- ``phases``     a desktop's phases and workloads -> guest I/O, CPU, memory, network per pass
- ``topology``   the lab as queueing stations; which station each role of a desktop's I/O visits
- ``model``      state and time step (closed-loop desktops, solved by approximate MVA)
- ``implicit``   the VDI part of a lab that only lists VMs (the 2007 lab's ten desktops)
- ``views``      model state -> the interface records the simulators serve
- ``scenarios``  fast-forward storms: boot, login (launchers and a broker), steady state
- ``calibration`` the 2012 paper's tables 5-7 and the 2014 write-cache post, with verdicts

See README.md in this folder for the physics, the parameters and the calibration.
"""

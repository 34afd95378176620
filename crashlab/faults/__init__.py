"""The faults that ship with crashlab, a module each, found through the entry-point group ``crashlab.faults``.

Each implements the fault protocol (`crashlab.protocols.fault`) and imports only the protocols and
what a fault breaks (the world, durable state, the job). A fault of yours subclasses `Fault` from
here or from the protocol, in a package of its own::

    [project.entry-points."crashlab.faults"]
    my-fault = "my_package.faults:MyFault"
"""

from __future__ import annotations

from crashlab.protocols.fault import Capability, Fault, Machine, Serving, Setting

__all__ = ["Capability", "Fault", "Machine", "Serving", "Setting"]

"""The scenario kinds of the certification document, one module each (see
:mod:`labctl.report.certify.registry`): the 2007 ones here; VDI kinds are added as modules beside them."""

"""What every simulated storage array shares: the twin's counters for one array (:mod:`.feed`) and
the sample history of arrays that answer averaged samples rather than raw counters (:mod:`.history`)."""

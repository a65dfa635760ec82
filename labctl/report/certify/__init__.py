"""``labctl certify``: a customer-facing certification document (HTML and PDF) from run folders.

- :mod:`~labctl.report.certify.model`: the document as data (sections of blocks, the verdict);
- :mod:`~labctl.report.certify.inputs`: the runs, their cells, labs, endpoint versions, file hashes;
- :mod:`~labctl.report.certify.verdict`: certified / with observations / not certified, and why;
- :mod:`~labctl.report.certify.registry` and :mod:`~labctl.report.certify.kinds`: sections per
  scenario kind (the 2007 boot storm, copy/reboot matrix and HA comparison; VDI kinds plug in);
- :mod:`~labctl.report.certify.configuration`, :mod:`~labctl.report.certify.method`,
  :mod:`~labctl.report.certify.appendix`: the configuration, the method and the traceability;
- :mod:`~labctl.report.certify.document`: everything assembled; :func:`certify` writes it;
- :mod:`~labctl.report.certify.html` and :mod:`~labctl.report.certify.pdf`: the HTML, and the PDF
  WeasyPrint makes from it (page numbers, contents with page numbers, fonts embedded).
"""

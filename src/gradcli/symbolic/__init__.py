"""Derivatives as expressions: graph nodes as values (``builder``), the canonical form a derivative
is printed in (``canonical*``), printing as gradcli text, LaTeX, Python and NumPy, Jacobians and
Hessians as formulas, and the points ``gradcli diff`` checks them at. Built on the numeric core
(``gradcli.engine``), whose op table supplies every rule; nothing here evaluates a batch or prints
to a terminal."""

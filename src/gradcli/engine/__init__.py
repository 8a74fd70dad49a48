"""The autograd core: the op table, graphs of nodes, forward values and reverse-mode gradients at
one point or many, derivatives as graphs, and the printed forms of graphs. No I/O, no parsing."""

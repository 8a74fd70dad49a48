"""gradcli's language: the grammar (``grammar/expr.lark``), the LALR driver and its tables, the
parser from program text to a graph, and values given from outside a program (``--x 1:2:9``)."""

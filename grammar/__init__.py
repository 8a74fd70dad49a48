"""Holds expr.lark, the grammar, so that it ships inside the installed package."""

"""What people and machines read: Rich views (tables, errors, trees), JSON records, pictures of
the graph and plots. Builds output; the CLI decides where it goes."""

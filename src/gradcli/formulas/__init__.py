"""``gradcli check``'s formula files: loading TOML check files, running their checks, and the
reports CI systems read (JUnit XML, GitHub annotations)."""

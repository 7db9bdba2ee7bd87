["mlxconfig", "-d", "0000:3b:00.0", "-e", "query", "ESWITCH_HAIRPIN_DESCRIPTORS[0..7]"]

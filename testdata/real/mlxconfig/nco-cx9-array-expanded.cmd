["mlxconfig", "-d", "0000:3b:00.0", "-e", "query", "PCI_DOWNSTREAM_PORT_OWNER[0..15]"]

["mstconfig", "-d", "0000:00:00.0", "set"]

["mstconfig", "-v"]

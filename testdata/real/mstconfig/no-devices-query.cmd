["mstconfig", "q"]

["mstconfig", "-d", "0000:00:00.0", "-y", "set", "LINK_TYPE_P1=ETH"]

["ethtool", "-A", "v0", "rx", "off", "tx", "off"]

["ethtool", "-G", "eth0", "rx", "128", "tx", "128"]

["ethtool", "-G", "eth0", "rx", "4096"]

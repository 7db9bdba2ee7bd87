["ethtool", "-G", "lo", "rx", "1"]

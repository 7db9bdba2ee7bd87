["mstfwreset","-d","0000:5e:00.0","reset","-y","--level","3"]

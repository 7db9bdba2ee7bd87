["nmcli","connection","add","type","infiniband","con-name","bad","infiniband.parent","ib0","infiniband.p-key","0x8000"]

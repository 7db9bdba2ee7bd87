package simcheck_test

import (
	"testing"

	"github.com/rdmaform/rdmaform/internal/testlab/need"
	"github.com/rdmaform/rdmaform/providers/firmware"
	"github.com/rdmaform/rdmaform/sim"
	"github.com/rdmaform/rdmaform/sim/mlxemu"
)

// TestEmulatedTLVClassesMatchParamDB: every parameter the emulated
// adapters have sits in the TLV mstflint's database puts it in, with its
// type and within its field's width, and the
// simulator keeps per function exactly the parameters of per-host-function
// TLVs (class 3) and shares the others across a card's functions, as the
// firmware does.
func TestEmulatedTLVClassesMatchParamDB(t *testing.T) {
	need.File(t, firmware.ParamDBPath, "apt-get install mstflint")
	db, err := firmware.LoadParamDB(firmware.ParamDBPath)
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, a := range []*mlxemu.Adapter{
		mlxemu.NewConnectX6VPI("0000:10:00.0", "mlx5_0"),
		mlxemu.NewConnectX5Eth("0000:20:00.0", "mlx5_2"),
		mlxemu.NewConnectX4Lx("0000:30:00.0", "mlx5_4"),
		mlxemu.NewConnectX6Dx("0000:40:00.0", "mlx5_6"),
	} {
		for _, p := range a.Params {
			d, ok := db.Lookup(p.Name)
			if !ok {
				t.Errorf("%s: emulated parameter %s is not in %s", a.BDF, p.Name, db.Path)
				continue
			}
			seen++
			if want := map[mlxemu.ParamType]string{mlxemu.TypeBool: "BOOL", mlxemu.TypeUnsigned: "UNSIGNED", mlxemu.TypeEnum: "ENUM"}[p.Type]; d.Type != want {
				t.Errorf("%s: emulated as %v, the database's type is %s", p.Name, p.Type, d.Type)
			}
			if p.Max != 0 && d.Bits > 0 && d.Bits < 63 && p.Max > 1<<d.Bits-1 {
				t.Errorf("%s: the emulator accepts up to %d, the database's field has %d bits", p.Name, p.Max, d.Bits)
			}
			if p.TLV != d.TLV {
				t.Errorf("%s: emulated in TLV %s, the database's is %s", p.Name, p.TLV, d.TLV)
			}
			if perFn := d.Class == 3; perFn != sim.PerFunctionTLV[p.TLV] {
				t.Errorf("%s: the simulator keeps it per function: %v; the database's class %d says %v", p.Name, sim.PerFunctionTLV[p.TLV], d.Class, perFn)
			}
			if p.Name != "" && firmware.CardWide(p.Name) != (d.Class == 0 || d.Class == 1) {
				t.Errorf("%s: firmware.CardWide says %v for class %d", p.Name, firmware.CardWide(p.Name), d.Class)
			}
		}
	}
	if seen == 0 {
		t.Fatal("no emulated parameter checked")
	}
}

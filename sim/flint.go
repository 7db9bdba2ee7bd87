package sim

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
)

// Firmware images on a simulated host are files of the simulator's own
// fixture form (WriteImage): a header line, then the image's PSID and
// firmware version, padded to a multiple of 4 bytes as real images are.
// The emulated mstflint and flint read them; any other file is "no valid
// image", as the real tool says of a file that holds none.
const imageHeader = "rdmaform-sim-firmware-image"

// ImageFile is the content of a simulated firmware image.
func ImageFile(psid, version string) []byte {
	b := []byte(fmt.Sprintf("%s\npsid %s\nversion %s\n", imageHeader, psid, version))
	for len(b)%4 != 0 {
		b = append(b, '\n')
	}
	return b
}

// WriteImage writes a simulated firmware image of psid and version at
// path (a path of this machine, such as one under the host's directory).
func WriteImage(path, psid, version string) error {
	return os.WriteFile(path, ImageFile(psid, version), 0o644)
}

// readImageFile reads a simulated image the way mstflint opens one: the
// real tool's -E- line for a file it cannot open or that holds no image
// (testdata/real/mstflint: image-missing, image-directory, image-empty,
// image-not-aligned, image-zeros).
func readImageFile(path string) (psid, version, errLine string) {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", "", fmt.Sprintf("-E- Cannot open Image: %s. Can not open file \"%s\" - No such file or directory\n", path, path)
	case err != nil:
		return "", "", fmt.Sprintf("-E- Cannot open Image: %s. Can not open file \"%s\" - %v\n", path, path, err)
	case fi.IsDir():
		return "", "", fmt.Sprintf("-E- Cannot open Image: %s. Can not get file size for \"%s\" - Success\n", path, path)
	case fi.Size() == 0:
		return "", "", fmt.Sprintf("-E- Cannot open Image: %s. Invalid Firmware Format (found FS Gen 1)\n", path)
	case fi.Size()%4 != 0:
		return "", "", fmt.Sprintf("-E- Cannot open Image: %s. Image size should be 4-bytes aligned. Make sure file %s is in the right format (binary image)\n", path, path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return "", "", fmt.Sprintf("-E- Cannot open Image: %s. Can not open file \"%s\" - %v\n", path, path, err)
	}
	lines := strings.Split(string(bytes.TrimRight(data, "\n")), "\n")
	if len(lines) == 3 && lines[0] == imageHeader {
		psid, _ = strings.CutPrefix(lines[1], "psid ")
		version, _ = strings.CutPrefix(lines[2], "version ")
		if psid != "" && version != "" {
			return psid, version, ""
		}
	}
	return "", "", fmt.Sprintf("-E- Failed to query image: %s. No valid image found\n", path)
}

// renderFlintQuery prints a query the way mstflint 4.x and flint do
// (flint/subcommands.cpp, QuerySubCommand: each "Key:" padded to 23
// columns), checked against the real outputs of testdata/real/mstflint.
// running is "" when the flash holds the running firmware; an image file
// has no GUIDs (N/A).
func renderFlintQuery(version, running, psid, guid string) string {
	var b strings.Builder
	line := func(k, v string) { fmt.Fprintf(&b, "%-23s%s\n", k+":", v) }
	line("Image type", "FS4")
	line("FW Version", version)
	if running != "" {
		line("FW Version(Running)", running)
	}
	line("FW Release Date", "28.10.2022")
	line("Product Version", version)
	line("Rom Info", "type=UEFI version=14.28.15 cpu=AMD64,AARCH64")
	b.WriteString(strings.Repeat(" ", 23) + "type=PXE version=3.6.804 cpu=AMD64\n")
	line("Description", "UID                GuidsNumber")
	if guid == "" {
		line("Base GUID", "N/A                     4")
		line("Base MAC", "N/A                     4")
	} else {
		line("Base GUID", guid+"        8")
		line("Base MAC", guid[:6]+guid[10:]+"            8")
	}
	line("Image VSD", "N/A")
	line("Device VSD", "N/A")
	line("PSID", psid)
	line("Security Attributes", "N/A")
	if guid == "" {
		line("Security Ver", "0") // an image file's (ironic-python-agent's capture)
	}
	return b.String()
}

// flintTool emulates mstflint (and MFT's flint): `-i IMAGE q`, `-d DEV q`
// and `-d DEV -i IMAGE [-y] burn`. A burn writes the card's flash (every
// function of the card): the running firmware changes at the next reboot
// that reloads it (rebootFirmware).
func flintTool(_ context.Context, s *Sim, args []string) (string, string, int) {
	var dev, image, cmd string
	for i := 0; i < len(args); i++ {
		switch a := args[i]; a {
		case "-d", "--device", "-i", "--image":
			if i+1 >= len(args) {
				return fmt.Sprintf("-E- Missing argument for flag %s\n", a), "", 1
			}
			if a == "-d" || a == "--device" {
				dev = args[i+1]
			} else {
				image = args[i+1]
			}
			i++
		case "-y", "--yes", "-qq":
		case "q", "query", "b", "burn":
			cmd = a[:1]
		default:
			return fmt.Sprintf("-E- Unknown option or command %q\n", a), "", 1
		}
	}
	switch {
	case cmd == "b" && (dev == "" || image == ""):
		return "-E- Command \"burn\" requires both image and device to be specified.\n", "", 1
	case cmd == "q" && image != "" && dev == "":
		psid, version, errLine := readImageFile(image)
		if errLine != "" {
			return errLine, "", 1
		}
		return renderFlintQuery(version, "", psid, ""), "", 0
	case cmd == "q" && dev != "":
		var out string
		code := 1
		s.view(func(st *State) {
			d := st.DeviceByPCI(fullPCI(dev))
			if d == nil || d.PCI == "" {
				out = fmt.Sprintf("-E- Cannot open Device: %s. Operation not supported. MFE_CR_ERROR\n", dev)
				return
			}
			flash, running := d.FWVer, ""
			if d.FlashFW != "" && d.FlashFW != d.FWVer {
				flash, running = d.FlashFW, d.FWVer
			}
			out, code = renderFlintQuery(flash, running, d.BoardID, strings.ReplaceAll(d.NodeGUID, ":", "")), 0
		})
		return out, "", code
	case cmd == "b":
		return s.burn(dev, image)
	}
	return "-E- No command given. See -h for help.\n", "", 1
}

// burn emulates `mstflint -d DEV -i IMAGE -y burn`: the image is checked
// (a valid image, the flash's PSID), then the card's flash holds it.
func (s *Sim) burn(dev, image string) (string, string, int) {
	psid, version, errLine := readImageFile(image)
	if errLine != "" {
		return errLine, "", 1
	}
	var out string
	code := 1
	err := s.mutate(false, func(st *State) error {
		d := st.DeviceByPCI(fullPCI(dev))
		if d == nil || d.PCI == "" {
			out = fmt.Sprintf("-E- Cannot open Device: %s. Operation not supported. MFE_CR_ERROR\n", dev)
			return nil
		}
		onFlash := d.FWVer
		if d.FlashFW != "" {
			onFlash = d.FlashFW
		}
		head := fmt.Sprintf("\n    Current FW version on flash:  %s\n    New FW version:               %s\n", onFlash, version)
		if psid != d.BoardID {
			out = head + fmt.Sprintf("-E- PSID mismatch. The PSID on flash (%s) differs from the PSID in the given image (%s).\n", d.BoardID, psid)
			return nil
		}
		for _, o := range st.Devices {
			if o.PCI != "" && slotOf(o.PCI) == slotOf(d.PCI) {
				o.FlashFW = version
			}
		}
		out, code = head+"\n"+burnProgress()+"-I- To load new FW run mstfwreset or reboot machine.\n", 0
		return nil
	})
	if err != nil {
		return out, err.Error() + "\n", 1
	}
	return out, "", code
}

// burnProgress is what mstflint prints while it burns (flint/
// subcommands.cpp of tag v4.21.0-1, burnCbFs3Func through CbCommon:
// "\r%s%3d%%" below 100, "\r%sOK  \n" at 100, then "\r%s\n" with the
// end string), for the completions 0, 25, 50, 75 (the real tool reports
// every step its flash writes make).
func burnProgress() string {
	const pre = "Burning FW image without signatures - "
	var b strings.Builder
	for _, c := range []int{0, 25, 50, 75} {
		fmt.Fprintf(&b, "\r%s%3d%%", pre, c)
	}
	fmt.Fprintf(&b, "\r%sOK  \n", pre)
	b.WriteString("\rRestoring signature                     - OK\n")
	return b.String()
}

// loadFlash makes each device run the firmware its flash holds (a reboot
// that reloads the firmware).
func (st *State) loadFlash() {
	st.loadCardFlash("")
}

// loadCardFlash makes the functions of the card in slot ("" every card)
// run the firmware its flash holds: a level 3 firmware reset loads the
// newly burned image, as mstflint's burn says ("To load new FW run
// mstfwreset or reboot machine").
func (st *State) loadCardFlash(slot string) {
	for _, d := range st.Devices {
		if d.FlashFW != "" && (slot == "" || (d.PCI != "" && slotOf(d.PCI) == slot)) {
			d.FWVer, d.FlashFW = d.FlashFW, ""
		}
	}
}

func fullPCI(s string) string {
	s = strings.ToLower(s)
	if strings.Count(s, ":") == 1 {
		return "0000:" + s
	}
	return s
}

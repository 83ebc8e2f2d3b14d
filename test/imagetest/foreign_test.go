package imagetest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/ebbflow/ebbflow/internal/imagelayout"
)

// The images are built for linux/amd64 and linux/arm64; the binary of the
// platform this machine is not runs under Debian's qemu-user-static
// (hack/install-qemu-user.sh), the emulator invoked explicitly, so that no
// binfmt_misc registration is needed or made.

// foreignArch is the architecture of the images this machine cannot run
// natively.
func foreignArch() string {
	if runtime.GOARCH == "arm64" {
		return "amd64"
	}
	return "arm64"
}

// qemuUser is the emulator of each architecture in qemu-user-static.
var qemuUser = map[string]string{"amd64": "qemu-x86_64-static", "arm64": "qemu-aarch64-static"}

// foreignBinary extracts /name of the foreign platform's image from the
// tarball at path (index → linux/ARCH manifest → its one layer) into a new
// directory and returns its path.
func foreignBinary(t *testing.T, path, name string) string {
	t.Helper()
	l, err := imagelayout.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	data, err := l.File("linux/"+foreignArch(), "/"+name)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	return bin
}

// runForeign runs bin with args under qemu-user, checks it exits 0 and
// returns what it printed (stdout and stderr).
func runForeign(ctx context.Context, t *testing.T, bin string, args ...string) string {
	t.Helper()
	qemu := qemuUser[foreignArch()]
	out, err := exec.CommandContext(ctx, qemu, append([]string{bin}, args...)...).CombinedOutput()
	if err != nil {
		t.Errorf("%s %s %q: %v (hack/install-qemu-user.sh installs %s)\n%s", qemu, filepath.Base(bin), args, err, qemu, out)
	}
	return string(out)
}

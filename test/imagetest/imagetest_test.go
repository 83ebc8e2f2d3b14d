package imagetest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// repoRoot is the module's root, seen from this package's directory.
const repoRoot = "../.."

// signalCtx is done on SIGINT or SIGTERM, so that an interrupted run still
// tears down what it started (the tests' cleanups run as the commands fail).
var signalCtx context.Context

func TestMain(m *testing.M) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	signalCtx = ctx
	code := m.Run()
	stop()
	os.Exit(code)
}

// ebbflowImages are the images `make image` builds, each with a phrase its
// --help prints.
var ebbflowImages = []struct{ name, helpPhrase string }{
	{"ebbflow-adapter", "--prometheus-url"},
	{"ebbflow-autoscaler", "--leader-elect"},
	{"ebbflow", "Available Commands:"},
}

// built is one tarball hack/image wrote, as it reported it.
type built struct{ ref, digest, path string }

// buildImages runs hack/image with args into dir and returns what it printed
// by image reference.
func buildImages(ctx context.Context, t *testing.T, dir string, args ...string) map[string]built {
	t.Helper()
	cmd := exec.CommandContext(ctx, "go", append([]string{"run", "./hack/image", "--output", dir}, args...)...)
	cmd.Dir = repoRoot
	cmd.Stderr = os.Stderr
	// go run, hack/image and its go build in a process group of their own,
	// killed together when ctx ends (the deadline or a signal).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("hack/image %q: %v\n%s", args, err, out)
	}
	images := map[string]built{}
	for line := range strings.Lines(string(out)) {
		if f := strings.Fields(line); len(f) == 3 && strings.HasPrefix(f[1], "sha256:") {
			images[f[0]] = built{ref: f[0], digest: f[1], path: f[2]}
		}
	}
	return images
}

// importImage imports b into c and checks the tarball names itself: one image,
// named b.ref, with the digest hack/image printed.
func importImage(ctx context.Context, t *testing.T, c *containerd, b built) {
	t.Helper()
	out, err := c.ctr.Run(ctx, "images", "import", b.path)
	if err != nil {
		t.Fatal(err)
	}
	// ctr 1.6 prints "unpacking NAME (sha256:...)...done" per image.
	want := fmt.Sprintf("unpacking %s (%s)...done", b.ref, b.digest)
	if strings.Count(out, "unpacking ") != 1 || !strings.Contains(out, want) {
		t.Errorf("ctr images import %s printed %q, want one image: %q", filepath.Base(b.path), out, want)
	}
}

func TestImagesRunAsUsersRunThem(t *testing.T) {
	ctx, cancel := testContext(t)
	defer cancel()
	c := startContainerd(ctx, t)
	out := t.TempDir()

	// The pause image first (small, quick), for two platforms as the local
	// cluster builds it; then the images as `make image` names them (the
	// chart's defaults), for this machine's platform.
	tag, revision := appVersion(t), sourceRevision(t)
	pause := buildImages(ctx, t, out, "--image=pause=./hack/image/pause", "--repository=registry.k8s.io", "--tag=3.10",
		"--platforms=linux/amd64,linux/arm64")
	for _, b := range pause {
		importImage(ctx, t, c, b)
	}
	if t.Failed() {
		t.FailNow()
	}
	t.Run("pause", func(t *testing.T) { testPause(ctx, t, c) })

	// Both platforms, as `make image` builds them: this machine's runs in
	// containerd, the other's under qemu-user (runForeign).
	images := buildImages(ctx, t, out, "--platforms=linux/amd64,linux/arm64")
	for _, b := range images {
		importImage(ctx, t, c, b)
	}
	if t.Failed() {
		t.FailNow()
	}

	for _, im := range ebbflowImages {
		ref := "ghcr.io/ebbflow/" + im.name + ":" + tag
		if _, ok := images[ref]; !ok {
			t.Errorf("hack/image did not report %s (reported %v)", ref, mapKeys(images))
			continue
		}
		wantVersion := fmt.Sprintf("%s version %s (revision %s, go", im.name, tag, revision)
		t.Run(im.name, func(t *testing.T) {
			if got := runOnce(ctx, t, c, ref, im.name+"-version", "/"+im.name, "--version"); !strings.HasPrefix(got, wantVersion) {
				t.Errorf("--version printed %q, want it to start with %q", got, wantVersion)
			}
			help := runOnce(ctx, t, c, ref, im.name+"-help", "/"+im.name, "--help")
			checkHelp(t, help, im.helpPhrase)
		})
		t.Run(im.name+"/"+foreignArch(), func(t *testing.T) {
			bin := foreignBinary(t, images[ref].path, im.name)
			if got := runForeign(ctx, t, bin, "--version"); !strings.HasPrefix(got, wantVersion) {
				t.Errorf("linux/%s binary under %s: --version printed %q, want it to start with %q", foreignArch(), qemuUser[foreignArch()], got, wantVersion)
			}
			checkHelp(t, runForeign(ctx, t, bin, "--help"), im.helpPhrase)
		})
	}
}

// checkHelp checks that help is a usage naming helpPhrase and --version.
func checkHelp(t *testing.T, help, helpPhrase string) {
	t.Helper()
	if !strings.Contains(help, "Usage:") || !strings.Contains(help, helpPhrase) || !strings.Contains(help, "--version") {
		t.Errorf("--help printed no usage with %q and --version:\n%s", helpPhrase, help)
	}
}

// testContext ends on SIGINT or SIGTERM and a minute before go test's
// -timeout would kill the process, so that the cleanups always run.
func testContext(t *testing.T) (context.Context, context.CancelFunc) {
	deadline, ok := t.Deadline()
	if !ok {
		return context.WithTimeout(signalCtx, 30*time.Minute)
	}
	return context.WithDeadline(signalCtx, deadline.Add(-time.Minute))
}

// runOnce runs ref's binary with args to completion as a user would (its
// image's user and entrypoint path, read-only root, no capabilities, its own
// network namespace), checks the container's OCI spec says so and the exit
// code is 0, removes the container and returns the output.
//
// `ctr run` replaces the image's entrypoint with its COMMAND (unlike a
// kubelet, which appends args), so the entrypoint is passed again.
func runOnce(ctx context.Context, t *testing.T, c *containerd, ref, id string, args ...string) string {
	t.Helper()
	out, err := c.ctr.Run(ctx, c.runArgs(append([]string{ref, id}, args...)...)...)
	if err != nil {
		t.Errorf("%v", err)
	}
	checkSpec(ctx, t, c, id, 65532)
	if _, err := c.ctr.Run(ctx, "containers", "delete", id); err != nil {
		t.Error(err)
	}
	return out
}

// ociSpec is the part of a container's OCI runtime spec the tests check.
type ociSpec struct {
	Process struct {
		User            struct{ UID, GID uint32 }
		Args            []string
		Capabilities    map[string][]string
		NoNewPrivileges bool
	}
	Root  struct{ Readonly bool }
	Linux struct {
		Namespaces []struct{ Type, Path string }
	}
}

// checkSpec checks the runtime spec of container id: user uid:uid, no
// capability in any set, no new privileges, read-only root, and a new network
// namespace (no path: not the host's, not another's).
func checkSpec(ctx context.Context, t *testing.T, c *containerd, id string, uid uint32) {
	t.Helper()
	out, err := c.ctr.Run(ctx, "containers", "info", id)
	if err != nil {
		t.Error(err)
		return
	}
	var info struct{ Spec ociSpec }
	if err := json.Unmarshal([]byte(out), &info); err != nil {
		t.Fatalf("containers info %s: %v", id, err)
	}
	s := info.Spec
	if s.Process.User.UID != uid || s.Process.User.GID != uid {
		t.Errorf("%s runs as %d:%d, want %d:%d", id, s.Process.User.UID, s.Process.User.GID, uid, uid)
	}
	for set, caps := range s.Process.Capabilities {
		if len(caps) > 0 {
			t.Errorf("%s has %s capabilities %v", id, set, caps)
		}
	}
	if !s.Process.NoNewPrivileges || !s.Root.Readonly {
		t.Errorf("%s: noNewPrivileges %v, read-only root %v", id, s.Process.NoNewPrivileges, s.Root.Readonly)
	}
	newNet := false
	for _, ns := range s.Linux.Namespaces {
		newNet = newNet || ns.Type == "network" && ns.Path == ""
	}
	if !newNet {
		t.Errorf("%s does not get a network namespace of its own: %+v", id, s.Linux.Namespaces)
	}
}

// testPause runs the pause image as the kubelet's sandbox: it keeps running,
// as its image's user 65535 with no capabilities in a fresh network
// namespace, and exits 0 on SIGTERM.
func testPause(ctx context.Context, t *testing.T, c *containerd) {
	const id = "pause"
	pidFile := filepath.Join(c.dir, "pause.pid")
	cmd := c.ctr.Command(ctx, c.runArgs("--pid-file", pidFile, "registry.k8s.io/pause:3.10", id)...)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()

	pid := waitPID(t, pidFile, done, &out)
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Uid:\t65535\t65535\t65535\t65535", "Gid:\t65535\t65535\t65535\t65535",
		"CapPrm:\t0000000000000000", "CapEff:\t0000000000000000", "CapBnd:\t0000000000000000", "NoNewPrivs:\t1"} {
		if !strings.Contains(string(status), want+"\n") {
			t.Errorf("pause process lacks %q:\n%s", want, status)
		}
	}
	hostNet, _ := os.Readlink("/proc/self/ns/net")
	if podNet, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", pid)); err != nil || podNet == hostNet {
		t.Errorf("pause's network namespace %q (%v), the host's %q", podNet, err, hostNet)
	}
	checkSpec(ctx, t, c, id, 65535)

	select {
	case err := <-done:
		t.Fatalf("pause exited by itself: %v: %s", err, out.String())
	case <-time.After(time.Second):
	}
	if _, err := c.ctr.Run(ctx, "task", "kill", "--signal", "SIGTERM", id); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("pause after SIGTERM: %v (want exit 0): %s", err, out.String())
		}
		if !strings.Contains(out.String(), "shutting down on terminated") {
			t.Errorf("pause printed %q", out.String())
		}
	case <-time.After(10 * time.Second):
		t.Errorf("pause still running 10s after SIGTERM")
	}
	if _, err := c.ctr.Run(ctx, "containers", "delete", id); err != nil {
		t.Error(err)
	}
}

// waitPID waits for ctr to write the container's PID.
func waitPID(t *testing.T, pidFile string, done <-chan error, out fmt.Stringer) int {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		if data, err := os.ReadFile(pidFile); err == nil && len(strings.TrimSpace(string(data))) > 0 {
			var pid int
			if _, err := fmt.Sscan(string(data), &pid); err == nil {
				return pid
			}
		}
		select {
		case err := <-done:
			t.Fatalf("ctr run pause exited: %v: %s", err, out)
		case <-deadline:
			t.Fatalf("no PID in %s after 30s", pidFile)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

var appVersionRE = regexp.MustCompile(`(?m)^appVersion:\s*"?([^"\s]+)"?\s*$`)

// appVersion is the chart's appVersion: the tag `make image` gives by default.
func appVersion(t *testing.T) string {
	data, err := os.ReadFile(filepath.Join(repoRoot, "charts/ebbflow/Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	m := appVersionRE.FindSubmatch(data)
	if m == nil {
		t.Fatal("no appVersion in Chart.yaml")
	}
	return string(m[1])
}

// sourceRevision is the revision hack/image records: HEAD, "-dirty" when
// tracked files changed.
func sourceRevision(t *testing.T) string {
	git := func(args ...string) string {
		out, err := exec.Command("git", append([]string{"-C", repoRoot}, args...)...).Output()
		if err != nil {
			t.Fatalf("git %v: %v", args, err)
		}
		return strings.TrimSpace(string(out))
	}
	rev := git("rev-parse", "HEAD")
	if git("status", "--porcelain", "--untracked-files=no") != "" {
		rev += "-dirty"
	}
	return rev
}

func mapKeys(m map[string]built) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

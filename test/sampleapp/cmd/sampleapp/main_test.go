package main

import (
	"context"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// The test binary runs main when this variable is set, so the tests drive
// the real program: flags, signal handling, exit codes.
const runMainEnv = "SAMPLEAPP_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(runMainEnv) == "1" {
		os.Args = append([]string{"sampleapp"}, strings.Fields(os.Getenv("SAMPLEAPP_TEST_ARGS"))...)
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func program(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), runMainEnv+"=1", "SAMPLEAPP_TEST_ARGS="+strings.Join(args, " "))
	return cmd
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func status(url string) int {
	c := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get(url)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestInvalidFlagsExit2(t *testing.T) {
	out, err := program(t, "--mode=worker", "--queue-url=queue:8080").CombinedOutput()
	exit, ok := err.(*exec.ExitError)
	if !ok || exit.ExitCode() != 2 || !strings.Contains(string(out), "--queue-url") {
		t.Fatalf("err = %v, want exit status 2 naming --queue-url; output:\n%s", err, out)
	}
}

func TestSIGTERMDrainsThenExits0(t *testing.T) {
	addr := freeAddr(t)
	cmd := program(t, "--listen-address="+addr, "--shutdown-delay=1s", "--cpu-per-request=1ms")
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	base := "http://" + addr
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// readyzIs polls /readyz every 20 ms (the drain lasts a second) until it
	// answers want or ctx ends.
	readyzIs := func(want int) bool {
		return wait.PollUntilContextCancel(ctx, 20*time.Millisecond, true, func(context.Context) (bool, error) {
			return status(base+"/readyz") == want, nil
		}) == nil
	}
	if !readyzIs(http.StatusOK) {
		t.Fatalf("never ready; output:\n%s", out.String())
	}
	if got := status(base + "/"); got != http.StatusOK {
		t.Fatalf("GET / = %d", got)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if !readyzIs(http.StatusServiceUnavailable) {
		t.Fatalf("readyz never failed after SIGTERM; output:\n%s", out.String())
	}
	if got := status(base + "/"); got != http.StatusOK {
		t.Errorf("GET / while draining = %d, want 200", got)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit: %v; output:\n%s", err, out.String())
	}
}

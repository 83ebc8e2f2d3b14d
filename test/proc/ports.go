package proc

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// Listening ports are chosen below the kernel's ephemeral range, so no
// outgoing connection can take one as its source port between choosing and
// binding, or while a component is restarted on the same port.
const (
	portRangeLow  = 20000
	portRangeHigh = 32767 // inclusive; Linux' ephemeral range starts at 32768 by default
)

// FreePorts returns n distinct loopback ports that were free a moment ago,
// outside the ephemeral range when possible. All probe listeners are held
// until every port is chosen, so the ports differ from each other.
func FreePorts(n int) ([]int, error) {
	high := portRangeHigh
	if low, ok := ephemeralLow(); ok {
		high = min(high, low-1)
	}
	ports := make([]int, 0, n)
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	for attempts := 0; len(ports) < n; attempts++ {
		addr := "127.0.0.1:0" // fallback: any port the kernel picks
		if high > portRangeLow && attempts < 200 {
			addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(portRangeLow+rand.IntN(high-portRangeLow+1)))
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			if addr == "127.0.0.1:0" {
				return nil, fmt.Errorf("find free port: %w", err)
			}
			continue
		}
		lns = append(lns, ln)
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// ephemeralLow returns the first port of Linux' ephemeral range.
func ephemeralLow() (int, bool) {
	data, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0, false
	}
	fields := strings.Fields(string(data))
	if len(fields) != 2 {
		return 0, false
	}
	low, err := strconv.Atoi(fields[0])
	return low, err == nil
}

// FreePort returns one loopback port as FreePorts does.
func FreePort() (int, error) {
	ps, err := FreePorts(1)
	if err != nil {
		return 0, err
	}
	return ps[0], nil
}

package cluster

import (
	"fmt"
	"time"

	"github.com/ebbflow/ebbflow/test/proc"
)

// stopGrace is how long a process may take to exit after SIGTERM before its
// process group is killed.
const stopGrace = 10 * time.Second

// process is one child process in its own process group, with stdout and
// stderr appended to a log file.
type process struct {
	*proc.Process
	name    string
	logPath string
}

// startProcess launches bin with args in dir, appending its output to logPath
// (proc.Launch).
func startProcess(name, dir, logPath, bin string, args []string, env []string) (*process, error) {
	p, err := proc.Launch(proc.Spec{Harness: "cluster", Name: name, Bin: bin, Args: args, Dir: dir, Env: env, LogPath: logPath})
	if err != nil {
		return nil, err
	}
	return &process{Process: p, name: name, logPath: logPath}, nil
}

// exitError describes an early exit, with the tail of the log.
func (p *process) exitError() error {
	return fmt.Errorf("%s exited (%v); log tail:\n%s", p.name, p.Err(), logTail(p.logPath, 30))
}

// logTail returns up to the last n lines of the file at path; it never fails.
func logTail(path string, n int) string { return proc.LogTail(path, n) }

package cluster

import (
	"fmt"
	"os"
	"path/filepath"
)

// auditDir is the folder under the work directory that holds the audit
// policy and log (Options.AuditLog).
const auditDir = "audit"

// auditPolicy logs every request at Metadata level (who, verb, resource,
// status; no bodies) once, when its response is complete.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived", "ResponseStarted"]
rules:
- level: Metadata
`

// Bounds of the audit log: rotated at auditLogMaxSizeMB, at most
// auditLogMaxBackups rotated files kept (about 1 GB in all).
const (
	auditLogMaxSizeMB  = 100
	auditLogMaxBackups = 10
)

// auditArgs writes the audit policy and returns kube-apiserver's audit flags,
// or nothing when Options.AuditLog is off. The log backend runs in batch mode
// so that writing the log never delays a request.
func (c *Cluster) auditArgs() ([]string, error) {
	if !c.opts.AuditLog {
		return nil, nil
	}
	dir := filepath.Join(c.dir, auditDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create audit directory: %w", err)
	}
	policy := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(policy, []byte(auditPolicy), 0o644); err != nil {
		return nil, fmt.Errorf("write audit policy: %w", err)
	}
	return []string{
		"--audit-policy-file=" + policy,
		"--audit-log-path=" + filepath.Join(dir, "audit.log"),
		"--audit-log-format=json",
		"--audit-log-mode=batch",
		fmt.Sprintf("--audit-log-maxsize=%d", auditLogMaxSizeMB),
		fmt.Sprintf("--audit-log-maxbackup=%d", auditLogMaxBackups),
		"--audit-log-maxage=1",
	}, nil
}

// AuditLogDir returns the folder of kube-apiserver's audit log: audit.log
// (JSON lines of audit.k8s.io/v1 Events at Metadata level, stage
// ResponseComplete only) and its rotated files audit-<time>.log beside it.
// Events reach the files asynchronously, within moments of the response.
// Empty when Options.AuditLog is off.
func (c *Cluster) AuditLogDir() string {
	if !c.opts.AuditLog {
		return ""
	}
	return filepath.Join(c.dir, auditDir)
}

package promtest

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// Target is one scrape target. Prometheus scrapes it over plain HTTP.
type Target struct {
	// Addr is host:port. The host must be "localhost", a loopback address or
	// an address of an interface of this machine: tests never talk to
	// anything off the machine.
	Addr string
	// Job is the job label and scrape_config name. Targets sharing a Job are
	// scraped by one scrape_config and must agree on HonorLabels and
	// MetricsPath. Empty means "test".
	Job string
	// HonorLabels keeps the target's own job/instance labels on conflict
	// (honor_labels: true).
	HonorLabels bool
	// MetricsPath defaults to /metrics.
	MetricsPath string
	// Labels are added to every series scraped from this target.
	Labels map[string]string
}

// promConfig is the subset of the Prometheus configuration file the harness
// writes. JSON is valid YAML, so it is written with encoding/json.
type promConfig struct {
	Global        globalConfig   `json:"global"`
	RuleFiles     []string       `json:"rule_files,omitempty"`
	ScrapeConfigs []scrapeConfig `json:"scrape_configs"`
	RemoteWrite   []remoteWrite  `json:"remote_write,omitempty"`
}

// RemoteWrite is one remote_write destination: a metric store on this
// machine that Prometheus sends every sample it scrapes to.
type RemoteWrite struct {
	// URL is the store's write endpoint (e.g. http://127.0.0.1:9009/api/v1/push).
	// Its host must be on this machine, as a Target's.
	URL string
	// Headers are sent with every write (e.g. Mimir's X-Scope-OrgID).
	Headers map[string]string
}

type remoteWrite struct {
	URL         string            `json:"url"`
	Headers     map[string]string `json:"headers,omitempty"`
	QueueConfig queueConfig       `json:"queue_config"`
}

// queueConfig sends within a second and retries quickly, so that a test sees
// its samples in the store soon and a store back from an outage is caught up
// within seconds.
type queueConfig struct {
	BatchSendDeadline string `json:"batch_send_deadline"`
	MinBackoff        string `json:"min_backoff"`
	MaxBackoff        string `json:"max_backoff"`
}

type globalConfig struct {
	ScrapeInterval     string            `json:"scrape_interval"`
	ScrapeTimeout      string            `json:"scrape_timeout"`
	EvaluationInterval string            `json:"evaluation_interval"`
	ExternalLabels     map[string]string `json:"external_labels,omitempty"`
}

type scrapeConfig struct {
	JobName       string         `json:"job_name"`
	HonorLabels   bool           `json:"honor_labels"`
	MetricsPath   string         `json:"metrics_path"`
	Scheme        string         `json:"scheme"`
	StaticConfigs []staticConfig `json:"static_configs"`
}

type staticConfig struct {
	Targets []string          `json:"targets"`
	Labels  map[string]string `json:"labels,omitempty"`
}

// configFiles are the files written into the server directory.
type configFiles struct {
	config string // prometheus config path
	rules  string // rule file path, written only when rules are given
}

// writeConfig renders targets, the options' rules, external labels and extra
// scrape configs into dir, replacing earlier files.
func writeConfig(files configFiles, o Options, targets []Target) error {
	cfg, err := buildConfig(o.ScrapeInterval, targets)
	if err != nil {
		return err
	}
	extraJobs, err := parseExtraScrapeConfigs(o.ExtraScrapeConfigsYAML)
	if err != nil {
		return err
	}
	for _, sc := range cfg.ScrapeConfigs {
		if slices.Contains(extraJobs, sc.JobName) {
			return fmt.Errorf("extra scrape configs: job_name %q is also the job of a target", sc.JobName)
		}
	}
	cfg.Global.ExternalLabels = o.ExternalLabels
	if cfg.RemoteWrite, err = buildRemoteWrite(o.RemoteWrite); err != nil {
		return err
	}
	if rulesYAML := o.RulesYAML; rulesYAML != "" {
		if err := writeFileAtomic(files.rules, []byte(rulesYAML)); err != nil {
			return err
		}
		cfg.RuleFiles = []string{files.rules}
	}
	data, err := renderConfig(cfg, o.ExtraScrapeConfigsYAML, len(extraJobs))
	if err != nil {
		return err
	}
	return writeFileAtomic(files.config, data)
}

// buildConfig groups targets into one scrape_config per job.
func buildConfig(interval time.Duration, targets []Target) (promConfig, error) {
	timeout := min(interval, 10*time.Second)
	cfg := promConfig{
		Global: globalConfig{
			ScrapeInterval:     promDuration(interval),
			ScrapeTimeout:      promDuration(timeout),
			EvaluationInterval: promDuration(interval),
		},
		ScrapeConfigs: []scrapeConfig{},
	}
	byJob := make(map[string]int)
	for _, t := range targets {
		if err := checkLocalTarget(t.Addr, net.InterfaceAddrs); err != nil {
			return promConfig{}, err
		}
		job := t.Job
		if job == "" {
			job = "test"
		}
		path := t.MetricsPath
		if path == "" {
			path = "/metrics"
		}
		sc := staticConfig{Targets: []string{t.Addr}, Labels: t.Labels}
		i, ok := byJob[job]
		if !ok {
			byJob[job] = len(cfg.ScrapeConfigs)
			cfg.ScrapeConfigs = append(cfg.ScrapeConfigs, scrapeConfig{
				JobName: job, HonorLabels: t.HonorLabels, MetricsPath: path, Scheme: "http",
				StaticConfigs: []staticConfig{sc},
			})
			continue
		}
		existing := &cfg.ScrapeConfigs[i]
		if existing.HonorLabels != t.HonorLabels || existing.MetricsPath != path {
			return promConfig{}, fmt.Errorf("job %q: targets disagree on honor_labels or metrics_path", job)
		}
		existing.StaticConfigs = append(existing.StaticConfigs, sc)
	}
	return cfg, nil
}

// buildRemoteWrite checks that every destination is on this machine and
// renders it.
func buildRemoteWrite(dests []RemoteWrite) ([]remoteWrite, error) {
	var out []remoteWrite
	for _, d := range dests {
		u, err := url.Parse(d.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("remote write %q: not an http(s) URL", d.URL)
		}
		if err := checkLocalTarget(u.Host, net.InterfaceAddrs); err != nil {
			return nil, fmt.Errorf("remote write: %w", err)
		}
		out = append(out, remoteWrite{URL: d.URL, Headers: d.Headers, QueueConfig: queueConfig{
			BatchSendDeadline: "1s", MinBackoff: "100ms", MaxBackoff: "1s",
		}})
	}
	return out, nil
}

// promDuration formats d in milliseconds, a unit every Prometheus version
// accepts and that never loses precision for test intervals.
func promDuration(d time.Duration) string {
	return fmt.Sprintf("%dms", d.Milliseconds())
}

// checkLocalTarget returns an error unless addr is host:port with
// "localhost" or a local IP (see checkLocalIP) as host.
func checkLocalTarget(addr string, ifaceAddrs func() ([]net.Addr, error)) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("target %q: %w", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	if err := checkLocalIP(host, ifaceAddrs); err != nil {
		return fmt.Errorf("target %q: %w", addr, err)
	}
	return nil
}

// checkLocalHost returns an error unless host is a loopback IP or the IP of
// an interface of this machine.
func checkLocalHost(host string) error {
	return checkLocalIP(host, net.InterfaceAddrs)
}

// checkLocalIP returns an error unless host is an IP literal that is a
// loopback address or one of ifaceAddrs (the addresses of this machine's
// interfaces). Traffic to either never leaves the machine. Unspecified
// addresses (0.0.0.0, ::) and names other than the caller's own checks are
// refused.
func checkLocalIP(host string, ifaceAddrs func() ([]net.Addr, error)) error {
	ip := net.ParseIP(host)
	if ip == nil {
		return fmt.Errorf("%q is not an IP address", host)
	}
	if ip.IsLoopback() {
		return nil
	}
	if !ip.IsUnspecified() {
		addrs, err := ifaceAddrs()
		if err != nil {
			return fmt.Errorf("addresses of local interfaces: %w", err)
		}
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && n.IP.Equal(ip) {
				return nil
			}
		}
	}
	return fmt.Errorf("%s is neither on loopback nor an address of a local interface", host)
}

// writeFileAtomic writes data to path through a rename so that a reloading
// Prometheus never reads a half-written file.
func writeFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	_, werr := tmp.Write(data)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

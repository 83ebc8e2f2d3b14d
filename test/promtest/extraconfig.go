package promtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"
)

// parseExtraScrapeConfigs checks that extra (Options.ExtraScrapeConfigsYAML)
// is empty or a YAML sequence of mappings with distinct, non-empty job_name
// strings, and returns those job names in order.
func parseExtraScrapeConfigs(extra string) ([]string, error) {
	if strings.TrimSpace(extra) == "" {
		return nil, nil
	}
	var entries []map[string]any
	if err := yaml.Unmarshal([]byte(dedent(extra)), &entries); err != nil {
		return nil, fmt.Errorf("extra scrape configs: want a YAML sequence of scrape configs: %w", err)
	}
	if len(entries) == 0 {
		return nil, errors.New("extra scrape configs: no entries")
	}
	jobs := make([]string, 0, len(entries))
	for i, e := range entries {
		job, _ := e["job_name"].(string)
		if job == "" {
			return nil, fmt.Errorf("extra scrape configs: entry %d has no job_name", i)
		}
		for _, j := range jobs {
			if j == job {
				return nil, fmt.Errorf("extra scrape configs: job_name %q appears twice", job)
			}
		}
		jobs = append(jobs, job)
	}
	return jobs, nil
}

// renderConfig encodes cfg. Without extra scrape configs it is JSON (valid
// YAML). With them it is a YAML document whose generated parts are JSON flow
// nodes and whose scrape_configs end with the extra entries verbatim (their
// common indentation removed); the document is parsed back to check that it
// holds exactly the generated and the nExtra extra scrape configs.
func renderConfig(cfg promConfig, extra string, nExtra int) ([]byte, error) {
	if nExtra == 0 {
		data, err := json.MarshalIndent(cfg, "", "  ")
		if err != nil {
			return nil, fmt.Errorf("encode prometheus config: %w", err)
		}
		return data, nil
	}
	var b bytes.Buffer
	b.WriteString("# Written by promtest: generated parts as JSON, then Options.ExtraScrapeConfigsYAML.\n")
	line := func(prefix string, v any) error {
		data, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("encode prometheus config: %w", err)
		}
		b.WriteString(prefix)
		b.Write(data)
		b.WriteByte('\n')
		return nil
	}
	if err := line("global: ", cfg.Global); err != nil {
		return nil, err
	}
	if len(cfg.RuleFiles) > 0 {
		if err := line("rule_files: ", cfg.RuleFiles); err != nil {
			return nil, err
		}
	}
	b.WriteString("scrape_configs:\n")
	for _, sc := range cfg.ScrapeConfigs {
		if err := line("- ", sc); err != nil {
			return nil, err
		}
	}
	b.WriteString(dedent(extra))
	if !bytes.HasSuffix(b.Bytes(), []byte("\n")) {
		b.WriteByte('\n')
	}

	var check struct {
		ScrapeConfigs []map[string]any `yaml:"scrape_configs"`
	}
	if err := yaml.Unmarshal(b.Bytes(), &check); err != nil {
		return nil, fmt.Errorf("extra scrape configs do not fit into the config (a block sequence, \"- job_name: ...\", is needed): %w", err)
	}
	if want := len(cfg.ScrapeConfigs) + nExtra; len(check.ScrapeConfigs) != want {
		return nil, fmt.Errorf("extra scrape configs do not fit into the config (a block sequence, \"- job_name: ...\", is needed): %d scrape configs, want %d",
			len(check.ScrapeConfigs), want)
	}
	return b.Bytes(), nil
}

// dedent removes the leading spaces common to all non-blank lines of s, so an
// indented Go raw string can be written as a top-level YAML sequence.
func dedent(s string) string {
	lines := strings.Split(s, "\n")
	common := -1
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		n := len(l) - len(strings.TrimLeft(l, " "))
		if common < 0 || n < common {
			common = n
		}
	}
	if common <= 0 {
		return s
	}
	for i, l := range lines {
		if len(l) >= common {
			lines[i] = l[common:]
		} else {
			lines[i] = strings.TrimLeft(l, " ")
		}
	}
	return strings.Join(lines, "\n")
}

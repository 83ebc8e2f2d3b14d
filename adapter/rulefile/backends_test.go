package rulefile

import (
	"strings"
	"testing"
)

func TestParseBackends(t *testing.T) {
	valid := `
backends:
- name: team-a
  url: https://prometheus.team-a:9090/?dedup=true
  verb: POST
  timeout: 10s
  maxConcurrentQueries: 4
  headers: {X-Scope-OrgID: team-a}
  caFile: /etc/ca.pem
  clientCertFile: /etc/tls.crt
  clientKeyFile: /etc/tls.key
  tokenFile: /var/run/token
- name: mimir-b
  url: http://mimir:8080/prometheus
  basicAuth: {username: ebbflow, passwordFile: /etc/password}
`
	f, err := ParseBackends([]byte(valid))
	if err != nil {
		t.Fatal(err)
	}
	if got := f.Names(); len(got) != 2 || got[0] != "team-a" || got[1] != "mimir-b" {
		t.Errorf("names = %v", got)
	}
	if f.Backends[0].Headers["X-Scope-OrgID"] != "team-a" || f.Backends[0].MaxConcurrentQueries != 4 || f.Backends[1].BasicAuth.Username != "ebbflow" {
		t.Errorf("decoded = %+v", f.Backends)
	}

	tests := []struct {
		name string
		yaml string
		want []string // every one must be in the error
	}{
		{"empty", `backends: []`, []string{"backends: must list at least one backend"}},
		{"unknown key", "backends:\n- name: a\n  url: http://p\n  tokenfile: x", []string{"line 4:3: backends[0].tokenfile: unknown key", `did you mean "tokenFile"`}},
		{"wrong type", "backends:\n- name: a\n  url: http://p\n  headers: [a]", []string{"backends[0].headers: expected a mapping"}},
		{"bad duration", "backends:\n- name: a\n  url: http://p\n  timeout: 10 seconds", []string{"backends[0].timeout: expected a duration"}},
		{"bad integer", "backends:\n- name: a\n  url: http://p\n  maxConcurrentQueries: '4'", []string{`line 4:25: backends[0].maxConcurrentQueries: expected an integer, found "4"`}},
		{"concurrency range", "backends:\n- name: a\n  url: http://p\n  maxConcurrentQueries: 5000", []string{"backends[0]: maxConcurrentQueries: must be between 0"}},
		{"every problem at once", `
backends:
- url: ftp://p
- name: Team_A
  url: http://user:pw@p
  verb: PUT
  tokenfile: /t
- name: default
  url: http://p
  clientCertFile: /c
  headers: {Authorization: "Bearer x", "bad header": v}
- name: dup
  url: http://p
  tokenFile: /t
  basicAuth: {username: u}
- name: dup
  url: ""
`, []string{
			"backends[0]: name: must not be empty",
			"backends[0]: url: must be an http or https URL",
			`backends[1]: name: "Team_A" must be a DNS label`,
			"backends[1]: url: must not hold credentials",
			`backends[1]: verb: must be GET or POST, not "PUT"`,
			`line 7:3: backends[1].tokenfile: unknown key "tokenfile"`,
			`backends[2]: name: "default" is the backend of --prometheus-url`,
			"backends[2]: clientCertFile: clientCertFile and clientKeyFile must be set together",
			"backends[2]: headers.Authorization: use tokenFile or basicAuth",
			`backends[2]: headers["bad header"]: is not an HTTP header name`,
			"backends[3]: basicAuth: username and passwordFile must both be set",
			"backends[3]: tokenFile: tokenFile and basicAuth are mutually exclusive",
			`backends[4]: name: duplicate backend "dup" (first in backends[3])`,
			"backends[4]: url: must not be empty",
		}},
		{"two documents", "backends: []\n---\nbackends: []", []string{"a backends file holds one YAML document"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseBackends([]byte(tt.yaml))
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
}

func TestCheckBackends(t *testing.T) {
	cfg := &File{
		Rules:         []DiscoveryRule{{SeriesQuery: "a", Backend: "team"}, {SeriesQuery: "b", Backend: DefaultBackend}, {SeriesQuery: "c"}},
		ExternalRules: []DiscoveryRule{{SeriesQuery: "q", Backend: "tem"}, {SeriesQuery: "r", Backend: "Bad Name"}},
		ResourceRules: &ResourceRules{Backend: "other"},
	}
	join := func(errs []FieldError) string {
		var b strings.Builder
		for _, e := range errs {
			b.WriteString(e.Error() + "\n")
		}
		return b.String()
	}
	got := join(CheckBackends(cfg, []string{"team"}))
	for _, w := range []string{
		`externalRules[0] (seriesQuery "q"): backend: unknown backend "tem" (known: default, team)`,
		`externalRules[1] (seriesQuery "r"): backend: "Bad Name" is not a backend name`,
		`resourceRules: backend: unknown backend "other"`,
	} {
		if !strings.Contains(got, w) {
			t.Errorf("errors lack %q:\n%s", w, got)
		}
	}
	if strings.Contains(got, "rules[0]") || strings.Contains(got, "rules[1]") || strings.Contains(got, "rules[2]") {
		t.Errorf("known, default and empty backends reported:\n%s", got)
	}
	if got := join(CheckBackends(cfg, []string{})); !strings.Contains(got, `rules[0] (seriesQuery "a"): backend: unknown backend "team": no --prometheus-backends-file is given`) {
		t.Errorf("without backends: %s", got)
	}
	if got := CheckBackends(cfg, nil); len(got) != 1 {
		t.Errorf("unchecked names: %v, want only the malformed one", got)
	}
}

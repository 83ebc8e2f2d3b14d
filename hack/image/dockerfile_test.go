package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// dockerStage is what the test reads of one FROM ... AS NAME stage.
type dockerStage struct {
	base       string // the FROM image or stage
	user       string
	entrypoint []string
	copies     map[string]string // destination -> source, of COPY --from=builder
}

// parseDockerfile reads the stages of a Dockerfile: FROM, USER, ENTRYPOINT
// (exec form) and COPY --from lines, joining continued lines.
func parseDockerfile(t *testing.T, text string) map[string]*dockerStage {
	t.Helper()
	stages := map[string]*dockerStage{}
	var cur *dockerStage
	text = strings.ReplaceAll(text, "\\\n", " ")
	for line := range strings.Lines(text) {
		f := strings.Fields(line)
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		switch strings.ToUpper(f[0]) {
		case "FROM":
			args := slices.DeleteFunc(f[1:], func(s string) bool { return strings.HasPrefix(s, "--") })
			if len(args) != 3 || !strings.EqualFold(args[1], "AS") {
				t.Fatalf("FROM without a stage name: %q", line)
			}
			cur = &dockerStage{base: args[0], copies: map[string]string{}}
			stages[args[2]] = cur
		case "USER":
			cur.user = f[1]
		case "ENTRYPOINT":
			if err := json.Unmarshal([]byte(strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), f[0]))), &cur.entrypoint); err != nil {
				t.Fatalf("ENTRYPOINT not in exec form: %q: %v", line, err)
			}
		case "COPY":
			if len(f) == 4 && strings.HasPrefix(f[1], "--from=") {
				cur.copies[f[3]] = f[2]
			}
		}
	}
	return stages
}

// resolve follows s's bases through the file's stages and returns the first
// non-empty value of get.
func resolve(stages map[string]*dockerStage, s *dockerStage, get func(*dockerStage) string) string {
	for s != nil {
		if v := get(s); v != "" {
			return v
		}
		s = stages[s.base]
	}
	return ""
}

// The Dockerfile (for users with Docker) must describe the images hack/image
// builds: one final stage per image, named like it, with the binary at
// /NAME, ENTRYPOINT ["/NAME"] and USER 65532:65532 (numeric).
func TestDockerfileDescribesSameImages(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(repoRoot, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	stages := parseDockerfile(t, string(data))
	var finals []string
	for name, s := range stages {
		if len(s.entrypoint) > 0 {
			finals = append(finals, name)
		}
	}
	var want []string
	for _, im := range defaultImages {
		want = append(want, im.Name)
	}
	slices.Sort(finals)
	slices.Sort(want)
	if !slices.Equal(finals, want) {
		t.Errorf("Dockerfile's stages with an ENTRYPOINT %v, hack/image's default images %v", finals, want)
	}
	for _, im := range defaultImages {
		s := stages[im.Name]
		if s == nil {
			continue
		}
		cfg := imageConfig(im.Name, nil)
		if !slices.Equal(s.entrypoint, cfg.Entrypoint) {
			t.Errorf("stage %s: ENTRYPOINT %q, hack/image %q", im.Name, s.entrypoint, cfg.Entrypoint)
		}
		if user := resolve(stages, s, func(s *dockerStage) string { return s.user }); user != cfg.User {
			t.Errorf("stage %s: USER %q, hack/image %q", im.Name, user, cfg.User)
		}
		if src := s.copies[cfg.Entrypoint[0]]; filepath.Base(src) != im.Name {
			t.Errorf("stage %s: copies %q to %s, want the %s binary", im.Name, src, cfg.Entrypoint[0], im.Name)
		}
	}
	// The last stage is what a plain `docker build` makes: the adapter, as
	// in the chart's default image.
	lastFrom := strings.LastIndex(string(data), "\nFROM ")
	if !strings.Contains(string(data)[lastFrom:], " AS ebbflow-adapter") {
		t.Error("the Dockerfile's last stage is not ebbflow-adapter")
	}
}

// The chart's default image references must name what `make image` builds:
// REPOSITORY/ebbflow-adapter and REPOSITORY/ebbflow-autoscaler, tag
// defaulting to appVersion (the default tag of hack/image).
func TestChartDefaultsNameMadeImages(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(repoRoot, "charts/ebbflow/values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	type image struct{ Repository, Tag string }
	var values struct {
		Adapter    struct{ Image image }
		Autoscaler struct{ Image image }
	}
	if err := yaml.Unmarshal(data, &values); err != nil {
		t.Fatal(err)
	}
	for name, im := range map[string]image{"ebbflow-adapter": values.Adapter.Image, "ebbflow-autoscaler": values.Autoscaler.Image} {
		if want := defaultRepository + "/" + name; im.Repository != want || im.Tag != "" {
			t.Errorf("chart default image %s:%q, want %s with tag \"\" (appVersion)", im.Repository, im.Tag, want)
		}
		if !slices.ContainsFunc(defaultImages, func(s imageSpec) bool { return s.Name == name }) {
			t.Errorf("the chart deploys %s, which make image does not build", name)
		}
	}
	helpers, err := os.ReadFile(filepath.Join(repoRoot, "charts/ebbflow/templates/_helpers.tpl"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(helpers), "default $root.Chart.AppVersion $img.tag") {
		t.Error("the chart's image tag no longer defaults to appVersion; hack/image's default tag must follow it")
	}
	tag, err := chartAppVersion(repoRoot)
	if err != nil || tag == "" {
		t.Errorf("appVersion %q, %v", tag, err)
	}
}

func TestParseDockerfile(t *testing.T) {
	stages := parseDockerfile(t, `FROM --platform=$BUILDPLATFORM golang AS builder
FROM base:1 AS runtime
USER 1:1
FROM runtime AS app
COPY --from=builder /out/app \
  /app
ENTRYPOINT ["/app", "serve"]
`)
	app := stages["app"]
	if app == nil || !slices.Equal(app.entrypoint, []string{"/app", "serve"}) || app.copies["/app"] != "/out/app" ||
		resolve(stages, app, func(s *dockerStage) string { return s.user }) != "1:1" {
		t.Errorf("parsed %+v", app)
	}
}

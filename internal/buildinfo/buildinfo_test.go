package buildinfo

import (
	"bytes"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

func TestResolve(t *testing.T) {
	vcs := &debug.BuildInfo{
		GoVersion: "go1.99.1",
		Main:      debug.Module{Path: "github.com/ebbflow/ebbflow", Version: "(devel)"},
		Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "abc123"},
			{Key: "vcs.modified", Value: "true"},
		},
	}
	tagged := &debug.BuildInfo{Main: debug.Module{Version: "v0.3.0"}}
	tests := []struct {
		name               string
		version, revision  string
		bi                 *debug.BuildInfo
		wantVer, wantRev   string
		wantMod            bool
		wantGo             string
		wantStringContains string
	}{
		{name: "linker values win", version: "v1.2.3", revision: "fff", bi: vcs,
			wantVer: "v1.2.3", wantRev: "fff", wantGo: "go1.99.1", wantStringContains: "v1.2.3 (revision fff, go1.99.1, "},
		{name: "vcs fallback", bi: vcs, wantVer: Unknown, wantRev: "abc123", wantMod: true, wantGo: "go1.99.1",
			wantStringContains: "unknown (revision abc123-dirty, go1.99.1, "},
		{name: "module version", bi: tagged, wantVer: "v0.3.0", wantRev: Unknown},
		{name: "nothing recorded", wantVer: Unknown, wantRev: Unknown},
		{name: "version only from linker", version: "v2.0.0", bi: vcs, wantVer: "v2.0.0", wantRev: "abc123", wantMod: true, wantGo: "go1.99.1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := resolve(tt.version, tt.revision, tt.bi)
			if got.Version != tt.wantVer || got.Revision != tt.wantRev || got.Modified != tt.wantMod {
				t.Errorf("resolve = %+v, want version %q revision %q modified %v", got, tt.wantVer, tt.wantRev, tt.wantMod)
			}
			if tt.wantGo != "" && got.GoVersion != tt.wantGo {
				t.Errorf("GoVersion = %q, want %q", got.GoVersion, tt.wantGo)
			}
			if got.GoVersion == "" || !strings.Contains(got.Platform, "/") {
				t.Errorf("Go version or platform missing: %+v", got)
			}
			if !strings.Contains(got.String(), tt.wantStringContains) {
				t.Errorf("String() = %q, want it to contain %q", got.String(), tt.wantStringContains)
			}
		})
	}
}

func TestAddVersionFlag(t *testing.T) {
	ran := false
	cmd := &cobra.Command{Use: "tool", Run: func(*cobra.Command, []string) { ran = true }}
	cmd.Flags().Int("v", 0, "verbosity, as klog's")
	AddVersionFlag(cmd)
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"--version"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if ran {
		t.Error("--version ran the command")
	}
	want := "tool version " + Get().String() + "\n"
	if out.String() != want {
		t.Errorf("output %q, want %q", out.String(), want)
	}
	if f := cmd.Flags().Lookup("version"); f == nil || f.Shorthand != "" {
		t.Errorf("version flag = %+v, want one without shorthand", f)
	}
}

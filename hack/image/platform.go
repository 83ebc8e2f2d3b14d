package main

import (
	"fmt"
	"slices"
	"strings"
)

// platform is one target of the build, e.g. linux/arm64 or linux/arm/v7.
type platform struct {
	OS, Arch, Variant string
}

func (p platform) String() string {
	s := p.OS + "/" + p.Arch
	if p.Variant != "" {
		s += "/" + p.Variant
	}
	return s
}

// goEnv is the environment go build needs to target p.
func (p platform) goEnv() []string {
	env := []string{"GOOS=" + p.OS, "GOARCH=" + p.Arch}
	if p.Arch == "arm" && p.Variant != "" {
		env = append(env, "GOARM="+strings.TrimPrefix(p.Variant, "v"))
	}
	return env
}

// parsePlatforms parses a comma-separated list of OS/ARCH[/VARIANT]. Only
// linux is accepted: the images run on Kubernetes nodes.
func parsePlatforms(s string) ([]platform, error) {
	var out []platform
	for item := range strings.SplitSeq(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		parts := strings.Split(item, "/")
		if len(parts) < 2 || len(parts) > 3 || parts[0] != "linux" || parts[1] == "" {
			return nil, fmt.Errorf("platform %q: want linux/ARCH[/VARIANT]", item)
		}
		p := platform{OS: parts[0], Arch: parts[1]}
		if len(parts) == 3 {
			p.Variant = parts[2]
		}
		if slices.Contains(out, p) {
			return nil, fmt.Errorf("platform %q given twice", item)
		}
		out = append(out, p)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no platform given")
	}
	return out, nil
}

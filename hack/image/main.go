// Command image builds Ebbflow's container images as OCI image layout
// tarballs, without a container daemon, a registry or a base image: each image
// is one layer holding one static Go binary, for every platform asked, under
// one image index. The tarball's index.json names the image, so
//
//	ctr -n k8s.io images import _output/images/ebbflow-adapter.tar
//
// stores it as ghcr.io/ebbflow/ebbflow-adapter:<tag>, and `crane push DIR REF`
// pushes it once extracted into DIR (crane reads OCI layouts only from
// directories). The same commit (and SOURCE_DATE_EPOCH) always gives the same
// digests.
//
// Usage:
//
//	go run ./hack/image [--image NAME=PKG]... [--platforms linux/amd64,linux/arm64]
//	    [--output _output/images] [--repository ghcr.io/ebbflow] [--tag TAG]
//
// See docs/images.md.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
)

// defaultImages are the images `make image` builds: the ones the Dockerfile
// describes (checked by TestDockerfileDescribesSameImages).
var defaultImages = []imageSpec{
	{Name: "ebbflow-adapter", Package: "./cmd/ebbflow-adapter"},
	{Name: "ebbflow-autoscaler", Package: "./cmd/ebbflow-autoscaler"},
	{Name: "ebbflow", Package: "./cmd/ebbflow"},
}

const (
	defaultRepository = "ghcr.io/ebbflow"
	defaultPlatforms  = "linux/amd64,linux/arm64"
	defaultOutput     = "_output/images"
	chartFile         = "charts/ebbflow/Chart.yaml"
	craneCmd          = "go run github.com/google/go-containerregistry/cmd/crane@v0.22.1"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

// run parses args, builds the images and prints one line per image.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	if o.Reproduce {
		return reproduce(ctx, o, stdout, stderr)
	}
	results, err := build(ctx, o, stderr)
	if err != nil {
		return err
	}
	for _, r := range results {
		fmt.Fprintf(stdout, "%s %s %s\n", r.Ref, r.Digest, r.Path)
	}
	if len(results) > 0 {
		r := results[0]
		dir := strings.TrimSuffix(r.Path, ".tar")
		fmt.Fprintf(stdout, "\nload on a containerd node: ctr -n k8s.io images import %s\n", r.Path)
		fmt.Fprintf(stdout, "push (crane reads an OCI layout from a directory):\n  mkdir -p %s && tar -xf %s -C %s\n  %s push %s %s\n",
			dir, r.Path, dir, craneCmd, dir, r.Ref)
	}
	return nil
}

// options are the parsed command line.
type options struct {
	Images     []imageSpec
	Platforms  []platform
	Output     string
	Repository string
	Tag        string   // empty: the chart's appVersion
	Dir        string   // the module's root, where go and git run
	Reproduce  bool     // check the images are reproducible instead of writing them
	Env        []string // added to go build's environment
}

// imageSpec is one --image NAME=PKG.
type imageSpec struct {
	Name, Package string
}

// imageFlag collects repeated --image NAME=PKG flags.
type imageFlag []imageSpec

func (f *imageFlag) String() string {
	var parts []string
	for _, s := range *f {
		parts = append(parts, s.Name+"="+s.Package)
	}
	return strings.Join(parts, ",")
}

func (f *imageFlag) Set(v string) error {
	name, pkg, ok := strings.Cut(v, "=")
	if !ok || !validName(name) || pkg == "" {
		return fmt.Errorf("want NAME=PKG with NAME of lower-case letters, digits, '-', '_' and '.', got %q", v)
	}
	for _, s := range *f {
		if s.Name == name {
			return fmt.Errorf("image %q given twice", name)
		}
	}
	*f = append(*f, imageSpec{Name: name, Package: pkg})
	return nil
}

// validName reports whether name can be both a file name and the last
// component of an image repository.
func validName(name string) bool {
	if name == "" || strings.Trim(name, "-_.") != name {
		return false
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return false
		}
	}
	return true
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet("image", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var images imageFlag
	fs.Var(&images, "image", "NAME=PKG: build image NAME from main package PKG (repeatable; default: ebbflow-adapter, ebbflow-autoscaler, ebbflow)")
	platforms := fs.String("platforms", defaultPlatforms, "comma-separated OS/ARCH[/VARIANT] list")
	o := options{}
	fs.StringVar(&o.Output, "output", defaultOutput, "directory for the NAME.tar files")
	fs.StringVar(&o.Repository, "repository", defaultRepository, "images are named REPOSITORY/NAME:TAG")
	fs.StringVar(&o.Tag, "tag", "", "image tag and version (default: appVersion of "+chartFile+")")
	fs.StringVar(&o.Dir, "C", ".", "the module's root directory")
	fs.BoolVar(&o.Reproduce, "reproduce", false, "write nothing: build at HEAD here and in a fresh clone at another path with an empty GOCACHE, and compare every digest (see docs/images.md)")
	if err := fs.Parse(args); err != nil {
		return options{}, err
	}
	if fs.NArg() > 0 {
		return options{}, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	o.Images = images
	if len(o.Images) == 0 {
		o.Images = defaultImages
	}
	var err error
	if o.Platforms, err = parsePlatforms(*platforms); err != nil {
		return options{}, err
	}
	o.Repository = strings.TrimSuffix(o.Repository, "/")
	if o.Repository == "" {
		return options{}, fmt.Errorf("--repository is empty")
	}
	if o.Dir, err = filepath.Abs(o.Dir); err != nil {
		return options{}, err
	}
	if !filepath.IsAbs(o.Output) {
		o.Output = filepath.Join(o.Dir, o.Output)
	}
	return o, nil
}

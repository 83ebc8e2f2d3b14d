package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// result is one image written.
type result struct {
	Name   string
	Ref    string  // REPOSITORY/NAME:TAG, as the tarball names it
	Digest v1.Hash // of the image index
	Path   string  // the tarball
}

// build builds every image of o for every platform of o and writes the
// tarballs, returning them in the order of o.Images.
func build(ctx context.Context, o options, stderr io.Writer) ([]result, error) {
	tag := o.Tag
	if tag == "" {
		var err error
		if tag, err = chartAppVersion(o.Dir); err != nil {
			return nil, fmt.Errorf("default tag: %w", err)
		}
	}
	src, err := readSource(ctx, o.Dir, tag)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(o.Output, 0o755); err != nil {
		return nil, err
	}
	binDir, err := os.MkdirTemp("", "ebbflow-image-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(binDir)

	perImage := make([][]v1.Image, len(o.Images))
	for _, p := range o.Platforms {
		out := filepath.Join(binDir, p.OS+"-"+p.Arch+p.Variant)
		bins, err := goBuild(ctx, o.Dir, out, o.Images, p, src, o.Env, stderr)
		if err != nil {
			return nil, err
		}
		for i, im := range o.Images {
			img, err := platformImage(bins[im.Name], im.Name, p, src)
			if err != nil {
				return nil, fmt.Errorf("image %s for %s: %w", im.Name, p, err)
			}
			perImage[i] = append(perImage[i], img)
		}
	}
	results := make([]result, 0, len(o.Images))
	for i, im := range o.Images {
		rawIndex, err := imageIndex(perImage[i], o.Platforms, src)
		if err != nil {
			return nil, err
		}
		r := result{Name: im.Name, Ref: o.Repository + "/" + im.Name + ":" + tag, Path: filepath.Join(o.Output, im.Name+".tar")}
		if r.Digest, _, err = v1.SHA256(bytesReader(rawIndex)); err != nil {
			return nil, err
		}
		if err := writeLayout(r.Path, rawIndex, perImage[i], r.Ref, tag, src.Created); err != nil {
			return nil, err
		}
		results = append(results, r)
	}
	return results, nil
}

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }

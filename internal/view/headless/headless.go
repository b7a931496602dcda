// Package headless loads pages in headless Chromium for tests that look at them as a person
// does: a screenshot (checked non-blank) and the DOM after scripts ran.
package headless

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// Timeout bounds one Chromium run.
const Timeout = 90 * time.Second

// Chromium returns the browser's path: $TRAMPJIT_CHROMIUM, else chromium or chromium-browser
// on PATH. Without one the test is skipped, unless TRAMPJIT_REQUIRE_CHROMIUM is set (make
// test sets it), when it fails: a suite that must look at its pages cannot silently not.
func Chromium(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("TRAMPJIT_CHROMIUM"); p != "" {
		return p
	}
	for _, n := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	if os.Getenv("TRAMPJIT_REQUIRE_CHROMIUM") != "" {
		t.Fatal("chromium is not installed and TRAMPJIT_REQUIRE_CHROMIUM is set: run make deps (Debian package chromium)")
	}
	t.Skip("chromium is not installed (Debian package chromium; make deps installs it): the page is not looked at")
	return ""
}

// run starts Chromium headless on page with a throw-away profile, no sandbox (tests run as
// root), nothing fetched in the background, and returns its standard output.
func run(bin, page string, extra ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	prof, err := os.MkdirTemp("", "trampjit-chromium-*")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(prof)
	abs, err := filepath.Abs(page)
	if err != nil {
		return nil, err
	}
	args := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
		"--no-default-browser-check", "--disable-extensions", "--disable-background-networking", "--disable-component-update",
		"--disable-sync", "--hide-scrollbars", "--user-data-dir=" + prof}
	args = append(append(args, extra...), "file://"+abs)
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = prof
	cmd.Env = append(os.Environ(), "HOME="+prof)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	if ctx.Err() != nil {
		return nil, fmt.Errorf("chromium did not finish in %v: %s", Timeout, tail(errb.Bytes()))
	}
	if err != nil {
		return nil, fmt.Errorf("chromium: %v: %s", err, tail(errb.Bytes()))
	}
	return out.Bytes(), nil
}

func tail(b []byte) []byte {
	if len(b) > 2000 {
		return b[len(b)-2000:]
	}
	return b
}

// DumpDOM returns the page's DOM as Chromium serializes it after loading it.
func DumpDOM(bin, page string) ([]byte, error) {
	out, err := run(bin, page, "--dump-dom")
	if err == nil && len(bytes.TrimSpace(out)) == 0 {
		err = fmt.Errorf("chromium --dump-dom printed nothing for %s", page)
	}
	return out, err
}

// Screenshot renders page at width x height into a PNG and decodes it.
func Screenshot(bin, page string, width, height int) (image.Image, error) {
	dir, err := os.MkdirTemp("", "trampjit-shot-*")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	shot := filepath.Join(dir, "page.png")
	if _, err := run(bin, page, "--screenshot="+shot, fmt.Sprintf("--window-size=%d,%d", width, height)); err != nil {
		return nil, err
	}
	f, err := os.Open(shot)
	if err != nil {
		return nil, fmt.Errorf("chromium wrote no screenshot: %w", err)
	}
	defer f.Close()
	return png.Decode(f)
}

// Ink counts an image's pixels that differ from its background (the top-left pixel's
// colour) and the distinct colours it uses (up to limit).
func Ink(img image.Image, limit int) (ink, colours int) {
	b := img.Bounds()
	bg := rgba(img, b.Min.X, b.Min.Y)
	seen := map[[4]uint32]bool{}
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			c := rgba(img, x, y)
			if c != bg {
				ink++
			}
			if len(seen) < limit {
				seen[c] = true
			}
		}
	}
	return ink, len(seen)
}

func rgba(img image.Image, x, y int) [4]uint32 {
	r, g, b, a := img.At(x, y).RGBA()
	return [4]uint32{r >> 8, g >> 8, b >> 8, a >> 8}
}

package main

import (
	"fmt"
	"io"

	"github.com/trampjit/trampjit/internal/view"
	"github.com/trampjit/trampjit/jit"
)

const frameUsage = `usage: trampjit frame (--btf FILE --func NAME | --proto '...' | --struct-ops OPS.MEMBER | --request FILE) --fentry N ...
                      [--arch A] [--kernel P] [--format text|json|svg|html] [-o FILE]

Draws the stack frame of one request's image: every slot the JIT reserves, high addresses at
the top, with its offset from the frame base and from sp, its size, its name in the kernel's
vocabulary, and the instructions (offset and section) that write and read it.

`

// frameJSON is `trampjit frame --format json`.
type frameJSON struct {
	Summary string `json:"summary"`
	*view.FrameView
}

func runFrame(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("frame", stderr)
	var rf requestFlags
	var out output
	var outPath string
	rf.register(fs)
	out.register(fs, "text, json, svg or html")
	fs.StringVar(&outPath, "o", "", "write to this file instead of standard output (written whole or not at all)")
	fs.Usage = func() {
		fmt.Fprint(stderr, frameUsage)
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := out.check("text", "json", "svg", "html"); err != nil {
		return err
	}
	req, err := rf.build(fs)
	if err != nil {
		return err
	}
	im, err := imageView(req, "img")
	if err != nil {
		return err
	}
	if im.Frame == nil {
		return fmt.Errorf("%s", im.FrameMissing)
	}
	im.FrameFirst = true
	return writeOutput(stdout, outPath, func(w io.Writer) error {
		switch out.format {
		case "json":
			return writeJSON(w, frameJSON{Summary: im.Summary, FrameView: im.Frame})
		case "svg":
			_, err := io.WriteString(w, im.Frame.SVG(im.ID, true))
			return err
		case "html":
			p := view.Page{Title: "trampjit frame: " + im.Heading, Images: []view.Image{*im}}
			return p.Write(w)
		}
		_, err := fmt.Fprintf(w, "# %s\n%s", im.Summary, im.Frame.Text())
		return err
	})
}

// imageView generates req and builds what a page shows of it: the summary, the annotated
// listing and the frame (FrameMissing says why there is none).
func imageView(req *jit.Request, id string) (*view.Image, error) {
	tr, img, err := jit.Generate(req)
	if err != nil {
		return nil, err
	}
	_, dis, err := jit.Lookup(req.Arch)
	if err != nil {
		return nil, err
	}
	lines, err := jit.Listing(tr, img, dis)
	if err != nil {
		return nil, err
	}
	im := &view.Image{ID: id, Heading: fmt.Sprintf("%s %s", req.Arch, req.Kernel), Summary: jit.Describe(tr, img), Lines: lines}
	f, err := jit.FrameOf(tr, img)
	if err != nil {
		return nil, fmt.Errorf("frame: %w", err)
	}
	if f == nil {
		im.FrameMissing = fmt.Sprintf("the %s backend does not describe its frame yet (no jit.Framer): no frame to draw", req.Arch)
	} else {
		im.Frame = view.Resolve(f, string(req.Kernel), lines)
	}
	return im, nil
}

// writeOutput runs write on standard output, or on -o FILE replaced whole or not at all.
func writeOutput(stdout io.Writer, outPath string, write func(io.Writer) error) error {
	if outPath == "" {
		return write(stdout)
	}
	o, err := createOutput(outPath)
	if err != nil {
		return err
	}
	defer o.abort()
	if err := write(o); err != nil {
		return err
	}
	return o.commit()
}

// genHTML is `trampjit gen --format html`: the listing and, below it, the frame.
func genHTML(w io.Writer, req *jit.Request) error {
	im, err := imageView(req, "img")
	if err != nil {
		return err
	}
	p := view.Page{Title: "trampjit gen: " + im.Heading, Images: []view.Image{*im}}
	return p.Write(w)
}

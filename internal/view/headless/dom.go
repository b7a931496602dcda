package headless

import (
	"bytes"
	"strings"

	"golang.org/x/net/html"
)

// DOM is a parsed page, as Chromium serialized it.
type DOM struct{ Root *html.Node }

// ParseDOM parses what DumpDOM returned.
func ParseDOM(b []byte) (*DOM, error) {
	n, err := html.Parse(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	return &DOM{Root: n}, nil
}

// Attr is the value of n's attribute key, or "".
func Attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

// HasClass reports whether n's class list holds c.
func HasClass(n *html.Node, c string) bool {
	for _, f := range strings.Fields(Attr(n, "class")) {
		if f == c {
			return true
		}
	}
	return false
}

// Text is the text content of n.
func Text(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return b.String()
}

// All returns the elements named tag ("" for any) for which keep (nil: every one) holds,
// in document order.
func (d *DOM) All(tag string, keep func(*html.Node) bool) []*html.Node {
	var out []*html.Node
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && (tag == "" || n.Data == tag) && (keep == nil || keep(n)) {
			out = append(out, n)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(d.Root)
	return out
}

// ByID returns the element with id, or nil.
func (d *DOM) ByID(id string) *html.Node {
	if l := d.All("", func(n *html.Node) bool { return Attr(n, "id") == id }); len(l) > 0 {
		return l[0]
	}
	return nil
}

package jit

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// Addr is a 64-bit address, written in JSON as a "0x..." string (numbers are accepted too).
type Addr uint64

func (a Addr) MarshalJSON() ([]byte, error) {
	return json.Marshal(fmt.Sprintf("%#x", uint64(a)))
}

func (a *Addr) UnmarshalJSON(b []byte) error {
	v, err := parseU64JSON(b)
	if err != nil {
		return fmt.Errorf("address: %w", err)
	}
	*a = Addr(v)
	return nil
}

// Cookie is a BPF link cookie. JSON accepts a number (negative numbers are two's complement)
// or a string in any base strconv understands ("0x...", "-1").
type Cookie uint64

func (c *Cookie) UnmarshalJSON(b []byte) error {
	v, err := parseU64JSON(b)
	if err != nil {
		return fmt.Errorf("cookie: %w", err)
	}
	*c = Cookie(v)
	return nil
}

func parseU64JSON(b []byte) (uint64, error) {
	var s string
	if len(b) > 0 && b[0] == '"' {
		if err := json.Unmarshal(b, &s); err != nil {
			return 0, err
		}
	} else {
		s = string(b)
	}
	if u, err := strconv.ParseUint(s, 0, 64); err == nil {
		return u, nil
	}
	i, err := strconv.ParseInt(s, 0, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a 64-bit integer", s)
	}
	return uint64(i), nil
}

// Command gen writes the configuration reference from the option table.
package main

import (
	"flag"
	"log"
	"os"

	"github.com/shoal-project/shoal/config"
)

func main() {
	out := flag.String("o", "docs/configuration.md", "output file")
	flag.Parse()
	if err := os.WriteFile(*out, []byte(config.Markdown()), 0o644); err != nil {
		log.Fatal(err)
	}
}

"""The engine: everything the CLI and the LSP server both call. No LSP, no CLI here."""

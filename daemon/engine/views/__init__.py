"""Every text a person reads about a workspace, made from engine data and nothing else: lens
and hint lines (lens_text), history tables (history_table), the table behind a tried-values
hint (tried_table), diagnostic messages (diagnostics),
a command's answer as one line for a client that shows none itself (command_answers, with
the masked counts the CLI's summaries print), and
the file a markdown answer is put in for such a client, outside every workspace (answer_files).
Both faces use them: the LSP features translate them into LSP types, the CLI prints them."""

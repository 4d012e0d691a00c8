/* The argument of --option, ID.KEY=VALUE, as the plexus commands
 * (tools/cli.c) and the node-test runner (tests/conformance/run_conformance.c)
 * take it. */
#ifndef PLEXUS_TOOLS_OPTION_ARG_H
#define PLEXUS_TOOLS_OPTION_ARG_H

#include <stdbool.h>
#include <string.h>

#include <plexus/plexus.h>

/* Splits `text` in place into *out: the id ends at the first '.', the key
 * at the first '=' after it, and the value is the rest. False (text
 * unchanged) when the id or the key is empty or there is no '='. */
static inline bool option_arg_parse(char *text, plx_backend_option *out) {
    char *dot = strchr(text, '.');
    char *eq = dot ? strchr(dot + 1, '=') : NULL;
    if (!dot || !eq || dot == text || eq == dot + 1) {
        return false;
    }
    *dot = '\0';
    *eq = '\0';
    out->backend_id = text;
    out->key = dot + 1;
    out->value = eq + 1;
    return true;
}

#endif /* PLEXUS_TOOLS_OPTION_ARG_H */

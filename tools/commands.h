/* plexus CLI: the commands that tools/plexus.c dispatches to, each in its
 * own files. What they share is in tools/cli.h. */
#ifndef PLEXUS_TOOLS_COMMANDS_H
#define PLEXUS_TOOLS_COMMANDS_H

/* `plexus run`: tools/run.c (and the run_*.c beside it). argv holds the
 * arguments after "run". */
int cmd_run(int argc, char **argv);

/* `plexus conformance`: tools/conformance.c (and conformance_ops.c). argv
 * holds the arguments after "conformance". */
int cmd_conformance(int argc, char **argv);

#endif

/*
 * table.c: rows of cells, for people (a header and aligned columns) or for
 * scripts (--tsv: TAB-separated, no header, times in ms). Cells are escaped
 * onto one line, so the rows people see are kept as TSV text until they are
 * printed: TAB and newline can only be the separators.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define GAP 2 /* spaces between the columns people see */

/* Columns on a terminal: code points, not bytes (wide characters count 1). */
static size_t width_of(const char *s, size_t n)
{
    size_t w = 0;
    for (size_t i = 0; i < n; i++)
        w += ((unsigned char)s[i] & 0xc0) != 0x80;
    return w;
}

static void open_rows(cli_table *t)
{
    t->buf = NULL;
    t->len = 0;
    /* With no memory for the rows, print them unaligned as they come:
     * the same cells, only not lined up. */
    t->f = open_memstream(&t->buf, &t->len);
    if (t->f == NULL)
        t->f = stdout;
}

void cli_table_init(cli_table *t, const cli *c, const char *const *columns, size_t ncols,
                    int stream)
{
    memset(t, 0, sizeof(*t));
    t->c = c;
    t->columns = columns;
    t->ncols = ncols < CLI_TABLE_MAX_COLS ? ncols : CLI_TABLE_MAX_COLS;
    t->stream = stream;
    for (size_t i = 0; i < t->ncols; i++)
        t->width[i] = strlen(columns[i]);
    if (c->tsv)
        t->f = stdout;
    else
        open_rows(t);
}

static void put_header(cli_table *t)
{
    for (size_t i = 0; i < t->ncols; i++) {
        fputs(t->columns[i], stdout);
        for (size_t pad = strlen(t->columns[i]); i + 1 < t->ncols && pad < t->width[i] + GAP; pad++)
            putchar(' ');
    }
    putchar('\n');
    t->headed = 1;
}

/* Where the next cell goes, after the separator before it. */
static FILE *cell(cli_table *t)
{
    if (t->col > 0)
        putc('\t', t->f);
    else if (t->f == stdout && !t->c->tsv && !t->headed)
        put_header(t); /* no memory for the rows: a header all the same */
    return t->f;
}

/* After a cell: a newline ends the row at its last column. */
static void cell_done(cli_table *t)
{
    if (++t->col < t->ncols)
        return;
    putc('\n', t->f);
    t->col = 0;
    if (t->stream)
        cli_table_flush(t);
}

void cli_cell_text(cli_table *t, const char *s)
{
    FILE *f = cell(t);
    if (s && s[0])
        cli_put_escaped(f, (const uint8_t *)s, strlen(s));
    else if (!t->c->tsv)
        putc('-', f);
    cell_done(t);
}

void cli_cell_bytes(cli_table *t, const uint8_t *p, size_t n)
{
    FILE *f = cell(t);
    if (t->c->hex_out)
        cli_put_hex(f, p, n);
    else
        cli_put_escaped(f, p, n);
    cell_done(t);
}

void cli_cell_u64(cli_table *t, uint64_t v)
{
    fprintf(cell(t), "%" PRIu64, v);
    cell_done(t);
}

void cli_cell_i64(cli_table *t, int64_t v)
{
    fprintf(cell(t), "%" PRId64, v);
    cell_done(t);
}

/* A time or a duration: the integer for scripts; for people none for 0,
 * "never" for the end of time, else the form format gives. */
static void cell_ms(cli_table *t, int64_t ms, const char *none,
                    void (*format)(int64_t, char[CLI_TIME_LEN]))
{
    FILE *f = cell(t);
    char text[CLI_TIME_LEN];
    if (t->c->tsv) {
        fprintf(f, "%" PRId64, ms);
    } else if (ms == 0) {
        fputs(none, f);
    } else if (ms == INT64_MAX && format == cli_format_time) {
        fputs("never", f);
    } else {
        format(ms, text);
        fputs(text, f);
    }
    cell_done(t);
}

void cli_cell_time(cli_table *t, int64_t ms, const char *none)
{
    cell_ms(t, ms, none, cli_format_time);
}

void cli_cell_duration(cli_table *t, int64_t ms, const char *none)
{
    cell_ms(t, ms, none, cli_format_duration);
}

/* One row of TSV text as aligned columns; the last column is not padded,
 * so a long value does not push trailing spaces. */
static void put_aligned(const cli_table *t, const char *row, size_t n)
{
    size_t col = 0, start = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i < n && row[i] != '\t')
            continue;
        fwrite(row + start, 1, i - start, stdout);
        if (i < n) {
            size_t w = width_of(row + start, i - start);
            for (size_t pad = w; pad < t->width[col] + GAP; pad++)
                putchar(' ');
        }
        col++;
        start = i + 1;
    }
    putchar('\n');
}

/* Widens the columns to the cells of rows (never narrower, so that pages
 * of one listing line up as far as they can). */
static void widen(cli_table *t, const char *rows, size_t n)
{
    size_t col = 0, start = 0;
    for (size_t i = 0; i < n; i++) {
        if (rows[i] != '\t' && rows[i] != '\n')
            continue;
        size_t w = width_of(rows + start, i - start);
        if (col < t->ncols && w > t->width[col])
            t->width[col] = w;
        col = rows[i] == '\n' ? 0 : col + 1;
        start = i + 1;
    }
}

int cli_table_flush(cli_table *t)
{
    if (t->f == stdout)
        return CLI_OK; /* --tsv, or no memory: printed already */
    if (fflush(t->f) != 0 || ferror(t->f)) {
        fputs("bitt: out of memory\n", stderr);
        return CLI_ERROR;
    }
    if (t->len == 0)
        return CLI_OK; /* no rows: no header either */
    widen(t, t->buf, t->len);
    if (!t->headed)
        put_header(t);
    for (size_t start = 0; start < t->len;) {
        const char *end = memchr(t->buf + start, '\n', t->len - start);
        size_t n = end ? (size_t)(end - (t->buf + start)) : t->len - start;
        put_aligned(t, t->buf + start, n);
        start += n + 1;
    }
    fclose(t->f);
    free(t->buf);
    open_rows(t);
    return CLI_OK;
}

int cli_table_done(cli_table *t)
{
    int code = cli_table_flush(t);
    if (t->f != stdout)
        fclose(t->f);
    free(t->buf);
    t->f = NULL;
    t->buf = NULL;
    return code;
}

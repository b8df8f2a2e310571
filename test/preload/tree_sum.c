/*
 * tree_sum.c - the program cc_compile.sh compiles and runs under tlmalloc.
 *
 * Inserts the keys i*7919 % N (a permutation of 0..N-1, as 7919 is prime
 * and does not divide N) into an unbalanced binary tree of malloc'd nodes
 * with strdup'd names, grows an array by realloc, and frees it all.  Prints
 * the node count, the key sum, and the tl_version() found by dlsym: the
 * last line is "tl_version missing" unless tlmalloc is loaded.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 100000L

struct node {
	long key;
	char *name;
	struct node *left, *right;
};

static struct node *insert(struct node *root, long key)
{
	struct node **at = &root;
	char name[32];

	while (*at)
		at = key < (*at)->key ? &(*at)->left : &(*at)->right;
	*at = calloc(1, sizeof(**at));
	if (!*at)
		exit(2);
	snprintf(name, sizeof(name), "node-%ld", key);
	(*at)->key = key;
	(*at)->name = strdup(name);
	return root;
}

static long walk(struct node *n, long **keys, long *count, long *cap)
{
	long sum;

	if (!n)
		return 0;
	sum = walk(n->left, keys, count, cap);
	if (*count == *cap) {
		*cap = *cap ? *cap * 2 : 16;
		*keys = realloc(*keys, (size_t)*cap * sizeof(**keys));
		if (!*keys)
			exit(2);
	}
	(*keys)[(*count)++] = n->key;
	if (strtol(n->name + 5, NULL, 10) != n->key)
		exit(3);
	sum += n->key + walk(n->right, keys, count, cap);
	free(n->name);
	free(n);
	return sum;
}

int main(void)
{
	const char *(*version)(void);
	struct node *root = NULL;
	long *keys = NULL, count = 0, cap = 0, i, sum;

	for (i = 0; i < N; i++)
		root = insert(root, i * 7919 % N);
	sum = walk(root, &keys, &count, &cap);
	for (i = 1; i < count; i++)
		if (keys[i - 1] >= keys[i])
			return 4;
	free(keys);
	printf("nodes %ld\nsum %ld\n", count, sum);
	version = (const char *(*)(void))dlsym(RTLD_DEFAULT, "tl_version");
	printf("tl_version %s\n", version ? version() : "missing");
	return 0;
}

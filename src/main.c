/* main.c: the kloop executable's entry point; everything else starts in kl_lua.c. */
int kl_lua_main(int argc, char **argv);

int main(int argc, char **argv) { return kl_lua_main(argc, argv); }

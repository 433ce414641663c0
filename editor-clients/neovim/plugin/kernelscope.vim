" kernelscope: nothing runs until require('kernelscope').setup({...}) is called.
